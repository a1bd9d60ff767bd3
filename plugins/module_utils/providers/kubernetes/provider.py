# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The ``kubernetes`` provider: each instance is a Squid Pod plus its squid.conf ConfigMap.

Contract profile: create submits (returns once the Pod and ConfigMap are accepted; readiness
comes from ``get``); delete returns early (the Pod terminates on its own and ``get`` shows it,
never Running, until it is gone); the IP is the PodIP; the marks are Pod labels;
``created_at`` is the Pod's creationTimestamp; ``list_by_tag`` is one paginated cluster-wide
list filtered on the managed and installation labels and fails as a whole. Every API call is
bounded by the Deadline (``_request_timeout``); the client never retries on its own.
Errors carry the configured provider name. ``CreateRequest.placement`` and ``cloud_init`` are
ignored: a Pod has no zone or machine type here, and Squid's config is generated
(docs/kubernetes-provider.md). ``CreateRequest.auth`` becomes a password Secret mounted into the
Pod (auth.py), rotated in place by ``sync_auth``.
"""

from __future__ import annotations

import logging
import threading

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.error_seam import ErrorSeam
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import (
    abandon,
    ownership,
    timestamps,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import kube_answers as answers
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import auth as authlib
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import pod as podlib
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import (
    remove,
    replace,
    sdk,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.check import (
    check_apiserver,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.classify import (
    classify,
    missing_kind,
    proves_missing,
    status_of,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.ids import (
    format_id,
    parse_id,
)

DEFAULT_NAMESPACE = "default"
# What a Forbidden adds: where this provider's rights come from (docs/kubernetes-provider.md).
RBAC_HINT = (
    "; the kubernetes provider needs rights on Pods and ConfigMaps: in the controller, install"
    " controller/config/with-kubernetes-provider (the component rbac/kubernetes-provider) or set the"
    " controller role's controller_kubernetes_provider_rbac; elsewhere, grant them to the kubeconfig's"
    " identity"
)
LIST_PAGE_SIZE = 500

log = logging.getLogger("crawl.egress_proxies.providers.kubernetes")


def _already_exists(exc: BaseException) -> bool:
    if not isinstance(exc, sdk.ApiException):
        return False
    code, reason, _message = status_of(exc)
    return code == 409 and reason == "AlreadyExists"


def _proves_missing(exc: BaseException, kind: str, name: str) -> bool:
    return isinstance(exc, sdk.ApiException) and proves_missing(exc, kind, name)


class KubernetesProvider(contract.Provider, contract.Checker, ErrorSeam):
    type_name = "kubernetes"
    supports_auth = True
    _parse_id = staticmethod(parse_id)  # ErrorSeam's hook

    def __init__(self, name: str, installation: str, block):
        super().__init__(name, installation)
        self.config = block
        self._client = None  # built on first use: constructing a provider never dials
        self._client_lock = threading.Lock()  # batches call one provider from several threads
        self._seen = contract.SeenFields()  # the fixed fields the last get of each id read

    # -- helpers -------------------------------------------------------------------------

    def _api_client(self, deadline):
        """Built on first use, within the deadline: loading a kubeconfig may run its exec
        credential plugin, a subprocess with no timeout of its own (helpers/abandon.py)."""
        with self._client_lock:
            if self._client is None:
                self._client = abandon.run(
                    sdk.api_client,
                    (self.config,),
                    self.config.request_timeout_seconds,
                    deadline,
                    "load kubeconfig",
                    thread_prefix="kubernetes",
                )
            return self._client

    def _core(self, deadline):
        return sdk.k8s_client.CoreV1Api(self._api_client(deadline))

    def _timeout(self, deadline, op: str) -> float:
        deadline.check(op)
        return deadline.budget(self.config.request_timeout_seconds)

    def _fail(self, op: str, provider_id: str, exc: BaseException, proof: str = "") -> errors.ProviderError:
        """ErrorSeam's hook. ``proof``: the kind (``pods``) whose NotFound, about the object
        ``provider_id`` names, proves it missing; any other NotFound is never NotFound (a list,
        a create into a missing namespace, a read of something else)."""
        if isinstance(exc, remove.Foreign):  # delete_ours' refusal: not ours to delete
            return errors.permanent(op, self.name, provider_id, str(exc))
        if isinstance(exc, remove.Changed):  # delete_ours' precondition lost a race: try again
            return errors.transient(op, self.name, provider_id, str(exc))
        proven = bool(proof) and _proves_missing(exc, proof, parse_id(provider_id)[1])
        cls = classify(exc)
        if cls == errors.NOT_FOUND and not proven:
            cls = (
                errors.PERMANENT if op == "create" and missing_kind(exc) == "namespaces" else errors.TRANSIENT
            )
        if isinstance(exc, sdk.ApiException):
            code, reason, message = status_of(exc)
            log.info(
                "provider=%s op=%s id=%s api error %s %s: %s",
                self.name,
                op,
                provider_id,
                code,
                reason,
                message,
            )
            cause = "%s %s: %s" % (code, reason, message or ("no Status body" if code else exc))
            if code == 403 and cls == errors.PERMANENT:
                cause += RBAC_HINT
            err = errors.wrap(cls, op, self.name, provider_id, cause)
            err.__cause__ = exc  # the SDK error stays reachable
            return err
        return errors.wrap(cls, op, self.name, provider_id, exc)

    def _namespace_for(self, req: contract.CreateRequest) -> str:
        return self.config.namespace or req.namespace or DEFAULT_NAMESPACE

    def _instance(self, pod: dict) -> contract.Instance:
        """The Instance of a Pod as the API server writes it (JSON: helpers/kube_answers.py)."""
        meta, status = answers.section(pod, "metadata"), answers.section(pod, "status")
        labels = meta.get("labels") or {}
        pod_ip = status.get("podIP") or ""
        state = podlib.state_of(
            status.get("phase") or "",
            pod_ip,
            meta.get("deletionTimestamp") is not None,
            podlib.pod_ready(status.get("conditions")),
        )
        return contract.Instance(
            id=format_id(meta.get("namespace", ""), meta.get("name", "")),
            name=meta.get("name", ""),
            uid=labels.get(names.LABEL_UID, ""),
            state=state,
            ip=pod_ip if state == contract.RUNNING else "",
            created_at=timestamps.parse(meta.get("creationTimestamp")),
            installation=labels.get(names.LABEL_INSTALL, ""),
            made_by=labels.get(names.LABEL_PROVIDER, ""),
        )

    def _other_provider(self, labels: dict, provider_id: str) -> str:
        """Why the Pod of ``labels`` is another provider's of this namespace (issue 28 §2), or ``""``."""
        return ownership.other_provider(
            "Pod %s" % provider_id, (labels or {}).get(names.LABEL_PROVIDER) or "", self.name
        )

    def _model_instance(self, pod, deadline) -> contract.Instance:
        """The Instance of a Pod the client read as a model (the rare paths keep the models)."""
        return self._instance(self._api_client(deadline).sanitize_for_serialization(pod))

    def _ensure_config_map(self, core, req, namespace: str, pod_uid: str, deadline) -> None:
        """Create the squid.conf ConfigMap, or bring an existing one of the same proxy up to date
        (it may still be owned by a previous Pod of the same name)."""
        body = podlib.build_config_map(req, namespace, self.installation, self.config, pod_uid)
        try:
            answers.read(
                core.create_namespaced_config_map,
                namespace,
                body,
                kind="ConfigMap",
                _request_timeout=self._timeout(deadline, "create"),
            )
            return
        except sdk.ApiException as exc:
            if not _already_exists(exc):
                raise
        current = core.read_namespaced_config_map(
            req.name, namespace, _request_timeout=self._timeout(deadline, "create")
        )
        owner_uid = (current.metadata.labels or {}).get(names.LABEL_UID, "")
        if owner_uid != req.uid:
            raise errors.permanent(
                "create",
                self.name,
                format_id(namespace, req.name),
                "ConfigMap %s/%s exists and belongs to uid %r, not %s"
                % (namespace, req.name, owner_uid, req.uid),
            )
        owners = [ref.uid for ref in current.metadata.owner_references or ()]
        if owners == [pod_uid] and (current.data or {}) == body["data"]:
            return
        body["metadata"]["resourceVersion"] = current.metadata.resource_version
        core.replace_namespaced_config_map(
            req.name, namespace, body, _request_timeout=self._timeout(deadline, "create")
        )

    # -- contract ------------------------------------------------------------------------

    def id_for(self, name, placement, namespace=""):
        """Where ``create`` would put it: the override, else the request's namespace, else
        ``default`` (the same rule as ``create``, so the module finds what create made)."""
        chosen = self.config.namespace or namespace or DEFAULT_NAMESPACE
        if names.is_dns_label(name) and names.is_dns_label(chosen):
            return format_id(chosen, name)
        return None

    def name_in_id(self, provider_id):
        return parse_id(provider_id)[1]

    def check_request(self, req):
        namespace = self._namespace_for(req)
        if not names.is_dns_label(namespace):
            return "namespace %r is not a DNS label" % namespace
        return ""

    def create(self, req: contract.CreateRequest, deadline) -> str:
        namespace = self._namespace_for(req)
        provider_id = format_id(namespace, req.name)
        if not names.is_dns_label(req.name):
            raise errors.permanent("create", self.name, req.name, "name %r is not a DNS label" % req.name)
        if not names.is_dns_label(namespace):
            raise errors.permanent(
                "create", self.name, provider_id, "namespace %r is not a DNS label" % namespace
            )
        if not req.uid:
            raise errors.permanent("create", self.name, provider_id, "uid is required (it is the GC mark)")
        if not 1 <= int(req.port) <= 65535:
            raise errors.permanent("create", self.name, provider_id, "port %r is not 1-65535" % req.port)
        log.info("provider=%s op=create request=%s", self.name, req.describe())
        self._seen.forget(provider_id)
        with self.operation("create", provider_id, parse=False):
            core = self._core(deadline)
            body = podlib.build_pod(req, namespace, self.installation, self.config, self.name)
            try:
                created = answers.read(
                    core.create_namespaced_pod,
                    namespace,
                    body,
                    kind="Pod",
                    _request_timeout=self._timeout(deadline, "create"),
                )
                answers.about(answers.section(created, "metadata"), "Pod", namespace, req.name)
                pod_uid = answers.section(created, "metadata").get("uid") or ""
                if not pod_uid:
                    raise answers.MalformedAnswer("the API server's answer to the Pod's create has no uid")
                log.info("provider=%s op=create id=%s pod created", self.name, provider_id)
            except sdk.ApiException as exc:
                if not _already_exists(exc):
                    raise
                pod = core.read_namespaced_pod(
                    req.name, namespace, _request_timeout=self._timeout(deadline, "create")
                )
                answers.about(pod.metadata, "Pod", namespace, req.name)
                owner_uid = (pod.metadata.labels or {}).get(names.LABEL_UID, "")
                if owner_uid != req.uid:
                    raise errors.permanent(
                        "create",
                        self.name,
                        provider_id,
                        "Pod %s exists and belongs to uid %r, not %s" % (provider_id, owner_uid, req.uid),
                    ) from None
                other = self._other_provider(pod.metadata.labels, provider_id)
                if other:
                    raise errors.permanent("create", self.name, provider_id, other) from None
                if self._model_instance(pod, deadline).state in (contract.STOPPED, contract.TERMINATED):
                    pod = self._recreate(core, req, namespace, body, pod, deadline)
                else:
                    refusal = authlib.volume_refusal(pod, req.auth)
                    if refusal:
                        raise errors.permanent("create", self.name, provider_id, refusal)
                    log.info("provider=%s op=create id=%s adopted the existing pod", self.name, provider_id)
                pod_uid = pod.metadata.uid
            self._ensure_config_map(core, req, namespace, pod_uid, deadline)
            if req.auth is not None:
                authlib.ensure(
                    core,
                    req,
                    namespace,
                    self.installation,
                    pod_uid,
                    lambda: self._timeout(deadline, "create"),
                    lambda message: errors.permanent("create", self.name, provider_id, message),
                )
        return provider_id

    def _recreate(self, core, req, namespace: str, body: dict, pod, deadline):
        """Our Pod has finished and will never run again: replace it (replace.py says why)."""
        log.info(
            "provider=%s op=create id=%s pod %s has finished (phase %s): replacing it",
            self.name,
            format_id(namespace, req.name),
            pod.metadata.uid,
            pod.status.phase if pod.status else "",
        )
        replace.free_name(
            core,
            req.name,
            namespace,
            pod.metadata.deletion_timestamp is not None,
            lambda: self._timeout(deadline, "create"),
            deadline,
        )
        return core.create_namespaced_pod(namespace, body, _request_timeout=self._timeout(deadline, "create"))

    def _read_pod(self, op: str, provider_id: str, deadline) -> dict:
        """The Pod ``provider_id`` names, as the API server answers it (JSON); NotFound only on
        the API server's proof that this Pod is missing."""
        with self.operation(op, provider_id, proof="pods") as (namespace, name):
            pod = answers.read(
                self._core(deadline).read_namespaced_pod,
                name,
                namespace,
                kind="Pod",
                _request_timeout=self._timeout(deadline, op),
            )
            answers.about(answers.section(pod, "metadata"), "Pod", namespace, name)
        return pod

    def get(self, provider_id: str, deadline) -> contract.Instance:
        pod = self._read_pod("get", provider_id, deadline)
        with self.operation("get", provider_id, parse=False):  # an answer of another shape: no instance
            other = self._other_provider(answers.section(pod, "metadata").get("labels"), provider_id)
            found = self._instance(pod)
        if other:  # not this provider's: it has no Pod of that name (as local answers)
            raise errors.not_found("get", self.name, provider_id, other)
        self._seen.keep(provider_id, podlib.fixed_fields(pod))
        return found

    def fixed_fields(self, provider_id: str, deadline) -> dict:
        """The Squid's containerPort, from the Pod the last ``get`` read (else read again)."""
        return self._seen.take(
            provider_id, lambda: podlib.fixed_fields(self._read_pod("fixed_fields", provider_id, deadline))
        )

    def sync_auth(self, provider_id: str, auth, deadline, apply: bool = True) -> bool:
        with self.operation("sync_auth", provider_id) as (namespace, name):
            core = self._core(deadline)
            with self.operation("sync_auth", provider_id, parse=False, proof="pods"):
                pod = core.read_namespaced_pod(
                    name, namespace, _request_timeout=self._timeout(deadline, "sync_auth")
                )
            answers.about(pod.metadata, "Pod", namespace, name)
            labels = pod.metadata.labels or {}
            if not names.is_managed(labels) or labels.get(names.LABEL_INSTALL) != self.installation:
                raise authlib.refused(self.name, provider_id, "Pod %s is not ours (no marks)" % provider_id)
            refusal = authlib.volume_refusal(pod, auth)
            if refusal:
                raise authlib.refused(self.name, provider_id, refusal)
            if auth is None:
                return False
            req = contract.CreateRequest(
                name=name, uid=labels.get(names.LABEL_UID, ""), namespace=namespace, auth=auth
            )

            def timeout() -> float:
                return self._timeout(deadline, "sync_auth")

            current = authlib.read(core, name, namespace, timeout)
            if current is not None and authlib.up_to_date(current, req, pod.metadata.uid):
                return False
            if not apply:
                return True
            authlib.ensure(
                core,
                req,
                namespace,
                self.installation,
                pod.metadata.uid,
                timeout,
                lambda message: authlib.refused(self.name, provider_id, message),
            )
            log.info("provider=%s op=sync_auth id=%s password Secret updated", self.name, provider_id)
            return True

    def delete(self, provider_id: str, deadline) -> None:
        with self.operation("delete", provider_id) as (namespace, name):
            self._seen.forget(provider_id)
            core = self._core(deadline)
            remove.delete_ours(
                core, namespace, name, self.installation, lambda: self._timeout(deadline, "delete"), self.name
            )
            authlib.delete_ours(core, name, namespace, lambda: self._timeout(deadline, "delete"))
            log.info("provider=%s op=delete id=%s deletion submitted", self.name, provider_id)

    def list_by_tag(self, deadline) -> list:
        selector = "%s=%s,%s=%s" % (
            names.LABEL_MANAGED,
            names.LABEL_MANAGED_VALUE,
            names.LABEL_INSTALL,
            self.installation,
        )
        out = []
        with self.operation("list", parse=False):
            core = self._core(deadline)
            token = None
            while True:
                kwargs = {"label_selector": selector, "limit": LIST_PAGE_SIZE}
                if token:
                    kwargs["_continue"] = token
                page = answers.read(
                    core.list_pod_for_all_namespaces,
                    kind="PodList",
                    _request_timeout=self._timeout(deadline, "list"),
                    **kwargs,
                )
                for item in page.get("items") or ():
                    # The selector did the filtering; check again so a mislabelled answer never
                    # reaches GC.
                    labels = answers.section(item, "metadata").get("labels") or {}
                    if (
                        names.is_managed(labels)
                        and labels.get(names.LABEL_INSTALL) == self.installation
                        and names.provider_owns(labels, self.name)  # another provider's on a shared namespace
                    ):
                        out.append(self._instance(item))
                token = answers.section(page, "metadata").get("continue")
                if not token:
                    break
        return out

    def check(self, deadline) -> list:
        return [check_apiserver(self, deadline)]

    def close(self) -> None:
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
