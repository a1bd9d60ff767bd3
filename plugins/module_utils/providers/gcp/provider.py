# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ``gcp`` provider: each instance is a Compute Engine VM in the configured project.

Contract profile: create submits ``instances.insert`` and returns (the operation is not
awaited); delete submits ``instances.delete`` and returns, but never while a delete of that
instance is still running; the IP is the ephemeral NAT IP (or the internal IP in internal
mode); the marks are native labels written by the insert itself; ``list_by_tag`` is one
aggregated list per page, filtered on the managed and installation labels, leaving out zones
the API reports unreachable. An insert the API accepted but that failed later (quota, a bad
image) is read back from its operation by ``get`` and reported with its class instead of
NotFound, for ``insertFailureWindowSeconds`` after it failed (then NotFound again, so the
caller creates once more); delete forgets such an operation. Placement: zone, machine type
and image are required, region only checked against the zone (docs/gcp-provider.md).

Who calls it: the modules and the controller, through ``registry.build`` (observed). Every
API call gets a timeout from the caller's Deadline; every error is ``errors.wrap``-ed with the
configured provider name after ``classify``; cloud-init is never logged.
"""

from __future__ import annotations

import datetime
import functools
import logging

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.error_seam import ErrorSeam
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import (
    abandon,
    cloud_init_auth,
    ownership,
    timestamps,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import (
    insert,
    labels,
    operations,
    subject,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.api import (
    ComputeAPI,
    rpc_attributes,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.classify import (
    OperationFailed,
    api_not_found,
    check_reason,
    classify,
    describe,
    proves_missing,
    status_of,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.instance import (
    NAME_RE,
    ZONE_RE,
    format_id,
    last_segment,
    parse_id,
    to_instance,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.backend_spans import backend_call

# Per-call cap; the Deadline shortens it. Long enough for a slow list page, short enough that a
# hung connection cannot eat a whole module run.
CALL_BUDGET_SECONDS = 30.0
LIST_PAGE_SIZE = 500  # the API maximum: 100 instances are one request
OPS_PAGE_SIZE = 500
DEFAULT_ADDRESS = "compute.googleapis.com"

# The statuses of ours that create brings back, and how (STOPPING/SUSPENDING settle first).
RESTART_VERBS = {"TERMINATED": "start", "SUSPENDED": "resume"}

log = logging.getLogger("crawl.egress_proxies.providers.gcp")


def _op_order(op: dict) -> tuple:
    """Oldest first by insertTime (parsed: offsets may differ), then by name."""
    when = timestamps.parse(op.get("insertTime"))
    return (when.timestamp() if when else 0.0, op.get("name", ""))


class _Invalid(Exception):
    """A request the provider can never satisfy (Permanent, before any call)."""


class GcpProvider(contract.Provider, contract.Checker, ErrorSeam):
    type_name = "gcp"
    supports_auth = True  # the collection's cloud-init part beside the request's (cloud_init_auth)
    _parse_id = staticmethod(parse_id)  # ErrorSeam's hook

    def __init__(self, name: str, installation: str, block, api=None):
        super().__init__(name, installation)
        self.config = block
        # The seam: the real adapter builds its SDK clients lazily, so this never dials.
        self.api = (
            api if api is not None else ComputeAPI(block.project, block.credentials_file, block.api_endpoint)
        )
        self.settings = insert.InsertSettings(
            project=block.project,
            installation=installation,
            network=block.network,
            network_tag=block.network_tag,
            disk_size_gb=block.disk_size_gb,
            address_mode=block.address_mode,
            provider=name,
        )
        self._seen = contract.SeenFields()  # the fixed fields the last get of each id read

    # -- helpers -------------------------------------------------------------------------

    def _call(self, deadline, what: str, method, *args):
        """One API call, bounded as a whole: the client's timeout applies per socket read (an
        answer trickling in, or a token refresh, would outlast it), so the call runs under
        abandon.run as well and is left behind at the deadline (Transient)."""
        deadline.check(what)
        budget = deadline.budget(CALL_BUDGET_SECONDS)
        call = functools.partial(method, *args, timeout=budget)
        rpc, attributes = rpc_attributes(getattr(method, "__name__", what), args)
        attributes["gcp.project"] = self.config.project
        try:
            with backend_call("gcp.%s" % rpc, attributes) as span:
                try:
                    answer = abandon.run(call, (), budget, deadline, what, thread_prefix="gcp")
                except Exception as exc:
                    if status_of(exc):
                        span.set_attribute("http.response.status_code", status_of(exc))
                    raise
                span.set_attribute("http.response.status_code", 200)  # the API answers 200 or raises
                return answer
        except abandon.CallAbandoned as exc:
            token_uri = getattr(self.api, "pending_token_uri", lambda: "")()
            if not token_uri:
                raise
            raise abandon.CallAbandoned(
                "%s: the OAuth token refresh at %s did not answer in time (credentialsFile %s)"
                % (exc, token_uri, self.config.credentials_file)
            ) from exc

    def _get_instance(self, deadline, what: str, zone: str, name: str) -> dict:
        """``instances.get``, counted only if the answer is that instance (subject.py)."""
        item = self._call(deadline, what, self.api.get_instance, zone, name)
        return subject.instance(item, self.config.project, zone, name)

    def _resource(self, *path: str) -> str:
        """The resource path the API names in its 404 (``projects/<project>/...``)."""
        return "/".join(("projects", self.config.project, *path))

    def _fail(self, op: str, provider_id: str, exc: BaseException, error_class: str | None = None):
        """ErrorSeam's hook, also called for an error this provider builds (a failed insert)."""
        cls = error_class or self._class_of(op, exc)
        # The raw status and reasons: classify collapses them, an admin needs them.
        log.warning(
            "provider=%s op=%s id=%s class=%s %s: %s",
            self.name,
            op,
            provider_id or "-",
            cls,
            describe(exc),
            exc,
        )
        return errors.wrap(cls, op, self.name, provider_id, exc)

    @staticmethod
    def _class_of(op: str, exc: BaseException) -> str:
        # The API's own 404 in create means a referenced zone, network or project is missing:
        # never NotFound from create (blueprint §3), and editing the spec or config fixes it. A
        # 404 that is not the API's answer (a wrong endpoint) stays Transient, as classify says.
        # classify never answers NotFound: only get, with proves_missing's proof, raises it.
        if op == "create" and api_not_found(exc):
            return errors.PERMANENT
        return classify(exc)

    @staticmethod
    def _target_filter(zone: str, name: str) -> str:
        # eq takes an RE2 regex over the whole field; the URL host differs by endpoint.
        return 'targetLink eq ".*/zones/%s/instances/%s"' % (zone, name)

    def _operations(self, zone: str, name: str, deadline) -> list:
        """Every zone operation that targeted the instance (one page, newest last); none when
        the zone itself does not exist (404), since nothing can have been created there."""
        try:
            ops = self._call(
                deadline,
                "list operations",
                self.api.list_zone_operations,
                zone,
                self._target_filter(zone, name),
                OPS_PAGE_SIZE,
            )
        except Exception as exc:
            if proves_missing(exc, self._resource("zones", zone)):
                return []
            raise
        # The filter asked for this instance's operations: one about anything else means the
        # answer is not about what was asked (subject.py), and a stray failed insert or running
        # delete read from it would misreport this instance.
        ops = [subject.zone_operation(o, self.config.project, zone, name) for o in ops]
        return sorted(ops, key=_op_order)

    def _validate(self, req: contract.CreateRequest) -> None:
        if not NAME_RE.fullmatch(req.name or ""):
            raise _Invalid("name %r is not a Compute Engine instance name" % (req.name,))
        if not req.uid:
            raise _Invalid("uid is required (it is the GC mark)")
        placement = req.placement
        if not placement.zone:
            raise _Invalid("placement.zone is required")
        if not ZONE_RE.fullmatch(placement.zone):
            raise _Invalid("placement.zone %r is not a zone name such as europe-west1-b" % (placement.zone,))
        if placement.region and not placement.zone.startswith(placement.region + "-"):
            raise _Invalid(
                "placement.zone %r is not in placement.region %r" % (placement.zone, placement.region)
            )
        if not placement.machine_type:
            raise _Invalid("placement.machine_type is required")
        if not placement.image:
            raise _Invalid("placement.image is required")
        if not 1 <= int(req.port) <= 65535:
            raise _Invalid("port %r is not 1-65535" % (req.port,))
        if req.auth is not None and cloud_init_auth.problem(req.cloud_init):
            raise _Invalid(cloud_init_auth.problem(req.cloud_init))

    # -- contract ------------------------------------------------------------------------

    def id_for(self, name, placement, namespace=""):
        if NAME_RE.fullmatch(name or "") and ZONE_RE.fullmatch(placement.zone or ""):
            return format_id(placement.zone, name)
        return None

    def name_in_id(self, provider_id):
        return parse_id(provider_id)[1]

    def check_request(self, req):
        try:
            self._validate(req)
        except _Invalid as exc:
            return str(exc)
        return ""

    def create(self, req: contract.CreateRequest, deadline) -> str:
        provider_id = format_id(req.placement.zone, req.name)
        self._seen.forget(provider_id)
        try:
            self._validate(req)
        except _Invalid as exc:
            raise errors.permanent("create", self.name, provider_id, str(exc)) from None
        with self.operation("create", provider_id, parse=False):
            if self.config.manage_firewall:
                self._ensure_firewall(int(req.port), deadline)
            body = insert.build_instance(req, self.settings)
            log.debug("provider=%s op=create insert %s", self.name, insert.describe(body))
            try:
                op = self._call(deadline, "create", self.api.insert_instance, req.placement.zone, body)
            except Exception as exc:
                if status_of(exc) != 409:
                    raise
                return self._adopt(req, provider_id, deadline)
            log.info(
                "provider=%s op=create id=%s submitted operation=%s cloud_init_bytes=%d",
                self.name,
                provider_id,
                op.get("name", "?"),
                len(req.cloud_init.encode("utf-8")),
            )
            return provider_id

    def _adopt(self, req, provider_id: str, deadline) -> str:
        """409: the name is taken. Ours (same uid) is success; anyone else's is Permanent."""
        try:
            existing = self._get_instance(deadline, "create", req.placement.zone, req.name)
        except Exception as exc:
            if status_of(exc) == 404:  # deleted between the two calls: let the caller retry
                raise self._fail("create", provider_id, exc, errors.TRANSIENT)
            raise
        if not labels.owned_by(existing, req.uid):
            raise errors.permanent(
                "create",
                self.name,
                provider_id,
                "instance %s exists and is not ours: its %s label is %r, not %r"
                % (
                    req.name,
                    names.LABEL_UID,
                    (existing.get("labels") or {}).get(names.LABEL_UID, ""),
                    labels.uid_label_value(req.uid),
                ),
            )
        other = self._other_provider(existing, req.name)
        if other:
            raise errors.permanent("create", self.name, provider_id, other)
        verb = RESTART_VERBS.get(existing.get("status", ""))
        if verb:
            # Stopped by someone (TERMINATED) or suspended: state: present means running again.
            op = self._call(deadline, "create", self.api.start_instance, req.placement.zone, req.name, verb)
            log.info(
                "provider=%s op=create id=%s was %s: %s submitted operation=%s",
                self.name,
                provider_id,
                existing.get("status"),
                verb,
                op.get("name", "?"),
            )
            return provider_id
        log.info("provider=%s op=create id=%s exists with our uid: adopted", self.name, provider_id)
        return provider_id

    def _ensure_firewall(self, port: int, deadline) -> None:
        wanted = insert.build_firewall(self.name, self.installation, port, self.config.project, self.config)
        try:
            existing = self._call(deadline, "firewall", self.api.get_firewall, wanted["name"])
            subject.named("firewall rule", existing, self.config.project, wanted["name"], "firewalls")
        except Exception as exc:
            if not proves_missing(exc, self._resource("global", "firewalls", wanted["name"])):
                raise
            existing = None
        if existing is None:
            try:
                op = self._call(deadline, "firewall", self.api.insert_firewall, wanted)
                self._await_global(op, deadline)
                log.info("provider=%s firewall %s created for port %d", self.name, wanted["name"], port)
            except Exception as exc:
                if status_of(exc) != 409:  # a concurrent create won: same rule
                    raise
        elif insert.firewall_differs(existing, wanted):
            op = self._call(deadline, "firewall", self.api.patch_firewall, wanted["name"], wanted)
            self._await_global(op, deadline)
            log.info("provider=%s firewall %s updated to the config", self.name, wanted["name"])

    def _await_global(self, op: dict, deadline) -> None:
        """Wait (within the deadline) for a firewall rule's operation to end, and raise its
        error: a rule accepted and then refused leaves the VMs unreachable on the proxy port."""
        operations.await_done(
            op,
            lambda name: subject.operation(
                self._call(deadline, "firewall", self.api.get_global_operation, name),
                self.config.project,
                name,
            ),
            deadline,
        )

    def get(self, provider_id: str, deadline) -> contract.Instance:
        with self.operation("get", provider_id) as (zone, name):
            try:
                item = self._get_instance(deadline, "get", zone, name)
            except Exception as exc:
                if not proves_missing(
                    exc, self._resource("zones", zone, "instances", name), self._resource("zones", zone)
                ):
                    raise
                self._raise_insert_failure(zone, name, provider_id, deadline)
                raise errors.not_found(
                    "get", self.name, provider_id, "no instance %s in zone %s" % (name, zone)
                )
            other = self._other_provider(item, name)
            if other:  # not this provider's: it has no instance of that name (as local answers)
                raise errors.not_found("get", self.name, provider_id, other)
            self._seen.keep(provider_id, labels.fixed_fields(item))
            return to_instance(item, zone, self.config.address_mode)

    def fixed_fields(self, provider_id: str, deadline) -> dict:
        """The port recorded at create, from the VM the last ``get`` read (else read again)."""
        return self._seen.take(provider_id, lambda: self._read_fixed_fields(provider_id, deadline))

    def _read_fixed_fields(self, provider_id: str, deadline) -> dict:
        try:
            zone, name = parse_id(provider_id)
        except ValueError:
            return {}
        with self.operation("fixed_fields", provider_id, parse=False):
            return labels.fixed_fields(self._get_instance(deadline, "fixed_fields", zone, name))

    def _other_provider(self, item: dict, name: str) -> str:
        """Why ``item`` is another provider's of this project (issue 28 §2), or ``""``."""
        made_by = (item.get("labels") or {}).get(names.LABEL_PROVIDER) or ""
        return ownership.other_provider("instance %s" % item.get("name", name), made_by, self.name)

    def sync_auth(self, provider_id: str, auth, deadline, apply: bool = True) -> bool:
        """A VM's credentials are fixed at creation (its user-data holds their hash): the same
        credentials are ``False``; others, or a VM made without auth, are Permanent saying it
        must be replaced (check mode too: applying would fail the same way)."""
        with self.operation("sync_auth", provider_id) as (zone, name):
            item = self._get_instance(deadline, "sync_auth", zone, name)
        line = cloud_init_auth.passwd_of(insert.user_data_of(item))
        if auth is not None and line and auth.matches(line):
            return False
        what = "other credentials" if line else "no authentication"
        raise errors.credentials_fixed(
            "sync_auth",
            self.name,
            provider_id,
            "the VM was created with %s, and a gcp VM's credentials are fixed at creation (its "
            "user-data): replace the instance (state: absent, then present) to change them" % what,
        )

    def _raise_insert_failure(self, zone: str, name: str, provider_id: str, deadline) -> None:
        """The instance is not there: if its latest insert failed or is pending, say so."""
        ops = self._operations(zone, name, deadline)
        latest = ops[-1] if ops else None
        if latest is None or latest.get("operationType") != "insert":
            return  # never inserted, or deleted since: truly gone
        if latest.get("status") != "DONE":
            raise errors.transient(
                "get",
                self.name,
                provider_id,
                "insert operation %s is %s; the instance is not visible yet"
                % (latest.get("name"), latest.get("status")),
            )
        if latest.get("error"):
            ended = timestamps.parse(latest.get("endTime") or latest.get("insertTime"))
            age = (datetime.datetime.now(datetime.UTC) - ended).total_seconds() if ended else 0.0
            if age > self.config.insert_failure_window_seconds:
                # Reported long enough: "not there" again, so the caller creates once more
                # (a quota failure must not stop retries forever, nor block a deletion).
                log.info(
                    "provider=%s op=get id=%s insert %s failed %.0fs ago: reported as gone",
                    self.name,
                    provider_id,
                    latest.get("name"),
                    age,
                )
                return
            raise self._fail("get", provider_id, OperationFailed(latest))

    def delete(self, provider_id: str, deadline) -> None:
        with self.operation("delete", provider_id) as (zone, name):
            self._seen.forget(provider_id)
            ops = self._operations(zone, name, deadline)
            running = [o for o in ops if o.get("operationType") == "delete" and o.get("status") != "DONE"]
            if running:
                log.info(
                    "provider=%s op=delete id=%s operation %s still running: not submitting another",
                    self.name,
                    provider_id,
                    running[-1].get("name"),
                )
                return
            try:
                # Compute Engine cannot delete on a label condition: read the marks first. What
                # remains is the window between this read and the delete (docs/gcp-provider.md).
                item = self._get_instance(deadline, "delete", zone, name)
                self._refuse_foreign(item, provider_id)
                op = self._call(deadline, "delete", self.api.delete_instance, zone, name)
            except errors.ProviderError:
                raise
            except Exception as exc:
                if not proves_missing(
                    exc, self._resource("zones", zone, "instances", name), self._resource("zones", zone)
                ):
                    raise
                self._forget_failed_insert(zone, ops, deadline)
                return
            log.info(
                "provider=%s op=delete id=%s submitted operation=%s", self.name, provider_id, op.get("name")
            )

    def _refuse_foreign(self, item: dict, provider_id: str) -> None:
        marks = item.get("labels") or {}
        refusal = ownership.foreign(
            "instance %s" % item.get("name", provider_id),
            names.is_managed(marks),
            marks.get(names.LABEL_INSTALL) or "",
            self.installation,
            marks.get(names.LABEL_PROVIDER) or "",
            self.name,
        )
        if refusal:
            raise errors.permanent("delete", self.name, provider_id, refusal)

    def _forget_failed_insert(self, zone: str, ops: list, deadline) -> None:
        """The instance is gone. A failed insert operation would keep ``get`` reporting its error
        (and a deletion waiting for NotFound waiting), so delete removes every failed insert
        of the instance: forgetting only the newest would surface the one before it."""
        for failed in [o for o in ops if o.get("operationType") == "insert" and o.get("error")]:
            try:
                self._call(deadline, "delete", self.api.delete_zone_operation, zone, failed["name"])
            except Exception as exc:
                if status_of(exc) != 404:
                    raise

    def list_by_tag(self, deadline) -> list:
        out = []
        token = ""
        with self.operation("list", parse=False):
            while True:
                page = self._call(
                    deadline,
                    "list",
                    self.api.list_instances_page,
                    labels.list_filter(self.installation),
                    LIST_PAGE_SIZE,
                    token,
                )
                out.extend(self._page_instances(page))
                token = page.get("nextPageToken") or ""
                if not token:
                    return out

    def _page_instances(self, page: dict) -> list:
        found = []
        for scope, scoped in sorted((page.get("items") or {}).items()):
            warning = scoped.get("warning") or {}
            if warning and warning.get("code") != "NO_RESULTS_ON_PAGE":
                # Partial success: an unreachable zone is left out (never deleted by GC).
                log.warning(
                    "provider=%s op=list %s left out: %s %s",
                    self.name,
                    scope,
                    warning.get("code"),
                    warning.get("message", ""),
                )
            for item in scoped.get("instances") or []:
                item_labels = item.get("labels") or {}
                # The server filtered already; checked again because listing something without
                # the mark is how a collector deletes a VM it does not own.
                if (
                    not names.is_managed(item_labels)
                    or item_labels.get(names.LABEL_INSTALL) != self.installation
                    or not names.provider_owns(item_labels, self.name)  # another provider's, same project
                ):
                    continue
                zone = last_segment(scope)
                subject.listed_instance(item, self.config.project, zone)
                found.append(to_instance(item, zone, self.config.address_mode))
        for unreachable in page.get("unreachables") or []:
            log.warning("provider=%s op=list unreachable scope left out: %s", self.name, unreachable)
        return found

    def close(self) -> None:
        self.api.close()

    # -- Checker -------------------------------------------------------------------------

    def check(self, deadline) -> list:
        address = self.config.api_endpoint or DEFAULT_ADDRESS
        target = "project/%s" % self.config.project
        details = {"project": self.config.project}
        try:
            # One page, one object: credentials, the API and compute.instances.list in one call.
            self._call(
                deadline, "check", self.api.list_instances_page, labels.list_filter(self.installation), 1, ""
            )
        except Exception as exc:
            log.warning("provider=%s op=check %s: %s", self.name, describe(exc), exc)
            return [contract.TargetStatus(target, address, False, check_reason(exc), str(exc), details)]
        # Quota headroom only for the configured regions: Check stays one request by default.
        regions = list(self.config.regions)
        if regions:
            details["quota"] = self._quota(regions, deadline)
        return [
            contract.TargetStatus(
                target, address, True, contract.REASON_REACHABLE, "instances.list allowed", details
            )
        ]

    def _quota(self, regions: list, deadline) -> dict:
        """Headroom per region for what a proxy consumes: instances, CPUs, external addresses."""
        out = {}
        for region in regions:
            try:
                found = self._call(deadline, "check", self.api.get_region, region)
                subject.named("region", found, self.config.project, region, "regions")
            except Exception as exc:
                out[region] = {"error": describe(exc)}
                continue
            metrics = {}
            for quota in found.get("quotas") or []:
                if quota.get("metric") in ("INSTANCES", "CPUS", "IN_USE_ADDRESSES"):
                    limit, usage = float(quota.get("limit", 0)), float(quota.get("usage", 0))
                    metrics[quota["metric"]] = {"limit": limit, "usage": usage, "headroom": limit - usage}
            out[region] = metrics
        return out
