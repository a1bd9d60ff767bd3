# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The provider contract (blueprint §2, §5): the types every backend speaks.

A provider manages VM-like instances behind an opaque, self-contained ``provider_id``. Callers
(the modules, hence playbooks and the controller) branch only on the error class and on
``Instance.state``; nothing above this layer knows how a backend works. The rules each method
must follow, and which caller breaks without them, are in docs/contract.md; the conformance
suite in tests/contract/ checks them against every provider.
"""

from __future__ import annotations

import abc
import dataclasses
import datetime
import threading

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.placement import Placement

__all__ = ["Placement"]  # defined in core/placement.py (the controller imports it there)

PROVISIONING = "Provisioning"
RUNNING = "Running"
STOPPED = "Stopped"
TERMINATED = "Terminated"
STATES = (PROVISIONING, RUNNING, STOPPED, TERMINATED)

# Shared Checker reasons (blueprint §5). Providers add their own only where an admin would fix
# the failure differently.
REASON_REACHABLE = "Reachable"
REASON_TIMEOUT = "Timeout"
REASON_UNREACHABLE = "Unreachable"
REASON_UNAUTHORIZED = "Unauthorized"
REASON_FORBIDDEN = "Forbidden"
REASON_API_ERROR = "APIError"
SHARED_REASONS = (
    REASON_REACHABLE,
    REASON_TIMEOUT,
    REASON_UNREACHABLE,
    REASON_UNAUTHORIZED,
    REASON_FORBIDDEN,
    REASON_API_ERROR,
)

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclasses.dataclass(frozen=True)
class CreateRequest:
    """Everything ``create`` needs; ``cloud_init`` may hold secrets and is never logged."""

    name: str
    uid: str
    namespace: str = ""
    proxy_name: str = ""
    placement: Placement = dataclasses.field(default_factory=Placement)
    cloud_init: str = dataclasses.field(default="", repr=False)
    port: int = 3128
    owner_reference: bool = False  # the owning Proxy (namespace, proxy_name, uid) may own it
    auth: object = dataclasses.field(default=None, repr=False)  # proxy_auth.Auth, or None: ranges only

    def describe(self) -> dict:
        """A loggable view: the cloud-init content is replaced by its byte count, and of the
        credentials only whether there are any."""
        return {
            "name": self.name,
            "uid": self.uid,
            "namespace": self.namespace,
            "proxy_name": self.proxy_name,
            "placement": dataclasses.asdict(self.placement),
            "cloud_init_bytes": len(self.cloud_init.encode("utf-8")),
            "port": self.port,
            "owner_reference": self.owner_reference,
            "auth": self.auth is not None,
        }


@dataclasses.dataclass(frozen=True)
class Instance:
    """What ``get`` and ``list_by_tag`` read back from the backend (never from memory).

    ``created_at`` is ``None`` when the backend has no readable timestamp: GC treats that as
    very old, which never shields an orphan forever. ``installation`` is the installation mark;
    ``made_by`` the mark of the configured provider that made it (``""``: made before providers
    were recorded), so no other provider on a shared backend adopts or deletes it.
    """

    id: str
    name: str
    uid: str
    state: str
    ip: str = ""
    created_at: datetime.datetime | None = None
    installation: str = ""
    made_by: str = dataclasses.field(default="", compare=False)

    def __post_init__(self):
        if self.state not in STATES:
            raise ValueError("unknown instance state %r" % (self.state,))
        if self.state == RUNNING and not self.ip:
            raise ValueError("an instance is Running only with an IP")

    def as_dict(self, provider: str = "") -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "uid": self.uid,
            "state": self.state,
            "ip": self.ip,
            "created_at": self.created_at.isoformat() if self.created_at else "",
            "installation": self.installation,
            "provider": provider,
        }


@dataclasses.dataclass(frozen=True)
class TargetStatus:
    """One independently failing part of a backend, as a health check saw it."""

    target: str
    address: str
    ready: bool
    reason: str
    message: str = ""
    details: dict = dataclasses.field(default_factory=dict)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


class SeenFields:
    """The fixed fields (``{"port": 3128}``) a provider's ``get`` found in what it read, kept
    for the ``fixed_fields`` call that follows it for the same id (``proxy_instance`` asks right
    after ``get``), so that check costs no second backend call. Each entry is handed over once;
    ``create`` and ``delete`` forget theirs (the instance may change). Thread-safe: a batch
    calls one provider from several threads."""

    def __init__(self):
        self._fields = {}
        self._lock = threading.Lock()

    def keep(self, provider_id: str, fields: dict) -> None:
        with self._lock:
            self._fields[provider_id] = dict(fields)

    def forget(self, provider_id: str) -> None:
        with self._lock:
            self._fields.pop(provider_id, None)

    def take(self, provider_id: str, read) -> dict:
        """The fields kept for ``provider_id``, else ``read()`` (the backend call)."""
        with self._lock:
            kept = self._fields.pop(provider_id, None)
        return kept if kept is not None else read()


class Provider(abc.ABC):
    """A named instance of a provider type; constructing one never contacts the backend.

    ``name`` is the configured name (what ``Proxy.spec.provider`` refers to) and ``installation``
    the installation id written as a mark on every instance.
    """

    type_name = ""
    supports_auth = False  # whether create renders ``CreateRequest.auth`` (else it is refused)

    def __init__(self, name: str, installation: str):
        self.name = name
        self.installation = installation

    @abc.abstractmethod
    def create(self, req: CreateRequest, deadline) -> str:
        """Submit the instance and return its provider id; idempotent by ``req.name``."""

    @abc.abstractmethod
    def get(self, provider_id: str, deadline) -> Instance:
        """Read the instance back; NotFound when, and only when, it is gone."""

    @abc.abstractmethod
    def delete(self, provider_id: str, deadline) -> None:
        """Remove the instance and everything create made; deleting what is gone succeeds."""

    @abc.abstractmethod
    def list_by_tag(self, deadline) -> list:
        """Every managed instance of this installation, or an error, never a partial guess."""

    def id_for(self, name: str, placement: Placement, namespace: str = "") -> str | None:
        """The id an instance of that name would have, when the provider can tell without a call.

        ``namespace`` is the request's (the owning Proxy's) namespace, which some providers put
        in the id (kubernetes). Lets ``state: absent`` work from a name alone; ``None`` means
        "list to find it".
        """
        return None

    def pool_lock_path(self, pool: str) -> str | None:
        """A lock file on the backend's own state that a ``proxy_pool`` run of ``pool`` holds
        for the whole run, so two runs on one pool never plan from the same view (issue 28
        §3); ``None``: the provider has no such state on this machine (runs are not serialised)."""
        return None

    def collect_leftovers(self, deadline) -> list:
        """Remove what a killed operation left outside any instance (the local provider's
        staging directories); returns what was removed. ``proxy_gc`` calls it (not in check
        mode). The default: nothing of the kind."""
        return []

    def list_problems(self) -> list:
        """``(id, message)`` of each entry the last ``list_by_tag`` left out because it could not
        be read (a corrupt record under a running instance): the listing runners report them in
        ``errors``, so an instance never vanishes without a word."""
        return []

    def fixed_fields(self, provider_id: str, deadline) -> dict:
        """The settings fixed at creation that the backend records, read back (``{"port":
        3128}``), so ``proxy_instance`` can refuse a request for others instead of silently
        ignoring it; ``{}`` where the provider cannot tell."""
        return {}

    def capacity(self) -> tuple | None:
        """``(most instances the backend can ever hold, why)`` where that is known without a call
        (the local provider's address range), else ``None``: lets ``proxy_pool`` refuse a count
        that cannot fit before creating thousands that fail alike."""
        return None

    def backend_key(self) -> str:
        """What identifies the backend: two providers with one key (two local providers on one
        stateDir) see the same instances under the same ids, so a pool counts them once."""
        return "provider:" + self.name

    def check_request(self, req: CreateRequest) -> str:
        """Why ``create(req)`` can never succeed, as far as the provider can tell without a call
        (a placement it does not know, a name the backend refuses), or ``""``. ``proxy_instance``
        asks it for every item before the first call, so one bad item changes nothing; ``create``
        still checks the same again."""
        return ""

    def name_in_id(self, provider_id: str) -> str | None:
        """The instance name ``provider_id`` names; ``ValueError`` when it is malformed.

        Parsed without a backend call, so ``proxy_instance`` rejects a malformed id before it
        touches anything (one bad item changes nothing). ``None``: this provider cannot tell.
        """
        return None

    def sync_auth(self, provider_id: str, auth, deadline, apply: bool = True) -> bool:
        """Make an existing instance accept exactly ``auth`` (``None``: no credentials asked).

        Returns whether it differed (and, with ``apply``, was changed in place). A provider
        that can read and rewrite its instance's password file in place implements it (local,
        kubernetes); where credentials are fixed at creation (user-data), it raises Permanent
        saying the instance must be replaced. The default: no auth support, nothing to sync.
        """
        return False

    def close(self) -> None:
        """Release clients and connections at the end of a module run."""


class Checker(abc.ABC):
    """Optional: a provider that can report its own health, one entry per target."""

    @abc.abstractmethod
    def check(self, deadline) -> list:
        """Never raises; every failure is a ``TargetStatus`` with ``ready=False``."""
