"""The state behind the fake Compute Engine API: instances, zone operations, firewalls, quotas.

Behaves like the real service where the provider depends on it:

- ``instances.insert`` validates the body synchronously (400 for a malformed one, 409 for a
  taken name) and answers with a RUNNING operation. The instance appears at once as
  PROVISIONING, moves to STAGING and RUNNING over time and gets its NAT IP when it stages. An
  insert that exceeds a regional quota (INSTANCES, CPUS, IN_USE_ADDRESSES) or names an image or
  machine type that does not exist is accepted too, but its operation ends DONE with an error
  (QUOTA_EXCEEDED 403, RESOURCE_NOT_FOUND 404, INVALID_FIELD_VALUE 400) and the instance never
  appears, exactly the asynchronous failure a caller only sees by reading the operation.
- ``instances.delete`` puts the instance into STOPPING; it disappears (with its boot disk and
  address) once the delete operation is DONE. Every delete call makes a new operation.
- Time runs lazily: states are computed from timestamps on each request; ``Timing`` makes it
  fast in tests. Addresses come from loopback ranges so nothing a test does can leave the host.

All methods take the state lock; errors are raised as ``ApiError`` and rendered by the server.
"""

from __future__ import annotations

import dataclasses
import datetime
import ipaddress
import itertools
import random
import threading
import time

from fakes.gcp.filters import FilterError, compile_filter

BASE = "https://www.googleapis.com/compute/v1"

MACHINE_TYPES = {
    "e2-micro": 2,
    "e2-small": 2,
    "e2-medium": 2,
    "e2-standard-2": 2,
    "e2-standard-4": 4,
    "n1-standard-1": 1,
    "n2-standard-2": 2,
}
IMAGES = (
    "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64",
    "projects/ubuntu-os-cloud/global/images/family/ubuntu-2204-lts",
    "projects/debian-cloud/global/images/family/debian-12",
    "projects/cos-cloud/global/images/family/cos-stable",
)
DEFAULT_ZONES = ("us-central1-a", "us-central1-b", "europe-west1-b")
DEFAULT_QUOTAS = {"INSTANCES": 24.0, "CPUS": 24.0, "IN_USE_ADDRESSES": 8.0, "DISKS_TOTAL_GB": 4096.0}


class ApiError(Exception):
    """A synchronous API error: HTTP status, message, the errors[].reason and error.status."""

    STATUS = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        409: "ALREADY_EXISTS",
        429: "RESOURCE_EXHAUSTED",
        500: "INTERNAL",
        503: "UNAVAILABLE",
    }

    def __init__(self, code: int, message: str, reason: str, domain: str = "global", status: str = ""):
        super().__init__(message)
        self.code, self.message, self.reason, self.domain = code, message, reason, domain
        self.status = status or self.STATUS.get(code, "UNKNOWN")

    def body(self) -> dict:
        return {
            "error": {
                "code": self.code,
                "message": self.message,
                "errors": [{"message": self.message, "domain": self.domain, "reason": self.reason}],
                "status": self.status,
            }
        }


@dataclasses.dataclass
class Timing:
    """Seconds each phase lasts (real Compute Engine: tens of seconds; tests: fractions)."""

    provisioning: float = 0.3
    staging: float = 0.3
    operation: float = 0.4
    deletion: float = 0.4


def _rfc3339(epoch: float) -> str:
    local = datetime.timezone(datetime.timedelta(hours=-8))  # the API answers in Pacific time
    return datetime.datetime.fromtimestamp(epoch, local).isoformat(timespec="milliseconds")


def _page_start(token: str) -> int:
    """The offset a page token (ours: a decimal offset) stands for; Google's 400 for any other."""
    if not token:
        return 0
    if not token.isdigit():
        raise ApiError(
            400, "Invalid value for field 'pageToken': '%s'. Invalid page token." % token, "invalid"
        )
    return int(token)


def region_of(zone: str) -> str:
    return zone.rsplit("-", 1)[0]


class ComputeState:
    def __init__(
        self, project: str, zones=DEFAULT_ZONES, timing: Timing | None = None, nat_range="127.203.0.0/16"
    ):
        self.project = project
        self.zones = tuple(zones)
        self.timing = timing or Timing()
        self.lock = threading.RLock()
        self.instances = {}  # (zone, name) -> record
        self.operations = {}  # (zone, op name) -> operation dict (zone operations)
        self.global_operations = {}  # op name -> operation dict (the firewall rules' operations)
        self.firewall_failure = None  # (code, message, http, http message): the next rule op fails
        self.firewalls = {}
        self.disks = {}  # (zone, name) -> disk left behind by a delete (boot disk without autoDelete)
        self.quotas = {region_of(z): dict(DEFAULT_QUOTAS) for z in self.zones}
        self.unreachable = set()  # zones aggregatedList cannot reach
        self._ids = itertools.count(random.randint(10**17, 9 * 10**17))
        self._nat = iter(ipaddress.ip_network(nat_range).hosts())
        self._internal = iter(ipaddress.ip_network("127.204.0.0/16").hosts())

    # -- helpers ---------------------------------------------------------------------------

    def url(self, *parts) -> str:
        return "/".join((BASE, "projects", self.project, *parts))

    def _not_found(self, *path: str) -> ApiError:
        """The API's 404 for ``projects/<project>/<path...>``, as the real service words it."""
        return ApiError(
            404, "The resource 'projects/%s/%s' was not found" % (self.project, "/".join(path)), "notFound"
        )

    def _check_zone(self, zone: str) -> None:
        if zone not in self.zones:
            raise self._not_found("zones", zone)

    def _instance_record(self, zone: str, name: str) -> dict:
        self._check_zone(zone)
        record = self.instances.get((zone, name))
        if record is None:
            raise self._not_found("zones", zone, "instances", name)
        return record

    def _new_operation(self, zone: str, op_type: str, target_name: str, error=None, duration=None) -> dict:
        now = time.time()
        name = "operation-%d-%s" % (int(now * 1000), "%016x" % random.getrandbits(64))
        op = {
            "kind": "compute#operation",
            "id": str(next(self._ids)),
            "name": name,
            "zone": self.url("zones", zone),
            "operationType": op_type,
            "targetLink": self.url("zones", zone, "instances", target_name),
            "targetId": str(next(self._ids)),
            "selfLink": self.url("zones", zone, "operations", name),
            **self._lifecycle(now, self.timing.operation if duration is None else duration, error),
        }
        self.operations[(zone, name)] = op
        return op

    def _lifecycle(self, now: float, duration: float, error) -> dict:
        """The fields an operation starts with: PENDING, RUNNING from a third of its duration
        (``_progress``), DONE at its end, as Compute Engine's operations go."""
        return {
            "status": "PENDING",
            "user": "fake@%s.iam.gserviceaccount.com" % self.project,
            "progress": 0,
            "insertTime": _rfc3339(now),
            "_started_at": now + duration / 3.0,
            "_done_at": now + duration,
            "_error": error,
        }

    @staticmethod
    def _progress(op: dict, now: float) -> None:
        if op["status"] == "PENDING" and now >= op["_started_at"]:
            op["status"], op["startTime"] = "RUNNING", _rfc3339(op["_started_at"])
        if op["status"] == "RUNNING" and now >= op["_done_at"]:
            op["status"], op["progress"], op["endTime"] = "DONE", 100, _rfc3339(op["_done_at"])
            if op["_error"]:
                code, message, http, http_message = op["_error"]
                op["error"] = {"errors": [{"code": code, "message": message}]}
                op["httpErrorStatusCode"], op["httpErrorMessage"] = http, http_message

    def _advance(self) -> None:
        """Apply the passage of time: finish operations, progress and remove instances."""
        now = time.time()
        for op in [*self.operations.values(), *self.global_operations.values()]:
            self._progress(op, now)
        for key, record in list(self.instances.items()):
            if record["deleting_until"] is not None:
                if now >= record["deleting_until"]:
                    del self.instances[key]
                    for disk in record["body"].get("disks") or []:
                        if not disk.get("autoDelete"):  # survives its instance, as on Compute Engine
                            self.disks[(key[0], disk["source"].rsplit("/", 1)[-1])] = disk
                continue
            if record["forced_status"]:
                continue
            age = now - record["created"]
            body = record["body"]
            if age >= self.timing.provisioning + self.timing.staging:
                body["status"] = "RUNNING"
            elif age >= self.timing.provisioning:
                body["status"] = "STAGING"
            if body["status"] in ("STAGING", "RUNNING"):
                self._assign_address(record)

    def _assign_address(self, record) -> None:
        for nic in record["body"]["networkInterfaces"]:
            for config in nic.get("accessConfigs") or []:
                if not config.get("natIP"):
                    config["natIP"] = str(next(self._nat))

    @staticmethod
    def public(resource: dict) -> dict:
        return {k: v for k, v in resource.items() if not k.startswith("_")}

    # -- usage and quotas ------------------------------------------------------------------

    def usage(self, region: str) -> dict:
        used = {"INSTANCES": 0.0, "CPUS": 0.0, "IN_USE_ADDRESSES": 0.0, "DISKS_TOTAL_GB": 0.0}
        for (zone, _name), record in self.instances.items():
            if region_of(zone) != region:
                continue
            used["INSTANCES"] += 1
            used["CPUS"] += record["cpus"]
            used["IN_USE_ADDRESSES"] += record["external"]
            used["DISKS_TOTAL_GB"] += record["disk_gb"]
        return used

    # -- instances -------------------------------------------------------------------------

    def insert_instance(self, zone: str, body: dict) -> dict:
        with self.lock:
            self._advance()
            self._check_zone(zone)
            name = body.get("name") or ""
            for field in ("name", "machineType", "disks", "networkInterfaces"):
                if not body.get(field):
                    raise ApiError(
                        400,
                        "Invalid value for field 'resource.%s': ''. Must be specified." % field,
                        "invalid",
                    )
            if (zone, name) in self.instances:
                raise ApiError(
                    409,
                    "The resource 'projects/%s/zones/%s/instances/%s' already exists"
                    % (self.project, zone, name),
                    "alreadyExists",
                )
            error = self._async_failure(zone, body)
            if error is not None:
                return self.public(self._new_operation(zone, "insert", name, error=error))
            disk = body["disks"][0].get("initializeParams") or {}
            machine = body["machineType"].rsplit("/", 1)[-1]
            now = time.time()
            nics = []
            for index, nic in enumerate(body["networkInterfaces"]):
                nics.append(
                    {
                        "kind": "compute#networkInterface",
                        "network": BASE
                        + "/"
                        + nic.get("network", "global/networks/default").split("/compute/v1/")[-1],
                        "subnetwork": self.url("regions", region_of(zone), "subnetworks", "default"),
                        "networkIP": str(next(self._internal)),
                        "name": "nic%d" % index,
                        "fingerprint": "%016x" % random.getrandbits(64),
                        "stackType": "IPV4_ONLY",
                        "accessConfigs": [
                            {
                                "kind": "compute#accessConfig",
                                "type": c.get("type", "ONE_TO_ONE_NAT"),
                                "name": c.get("name", "External NAT"),
                                "networkTier": "PREMIUM",
                            }
                            for c in nic.get("accessConfigs") or []
                        ],
                    }
                )
            instance = {
                "kind": "compute#instance",
                "id": str(next(self._ids)),
                "creationTimestamp": _rfc3339(now),
                "name": name,
                "tags": {
                    "items": list((body.get("tags") or {}).get("items") or []),
                    "fingerprint": "42WmSpB8rSM=",
                },
                "machineType": self.url("zones", zone, "machineTypes", machine),
                "status": "PROVISIONING",
                "zone": self.url("zones", zone),
                "canIpForward": False,
                "networkInterfaces": nics,
                "disks": [
                    {
                        "kind": "compute#attachedDisk",
                        "type": "PERSISTENT",
                        "mode": "READ_WRITE",
                        "source": self.url("zones", zone, "disks", name),
                        "deviceName": "persistent-disk-0",
                        "index": 0,
                        "boot": True,
                        "autoDelete": bool(body["disks"][0].get("autoDelete")),
                        "interface": "SCSI",
                        "diskSizeGb": str(disk.get("diskSizeGb", "10")),
                    }
                ],
                "metadata": {
                    "kind": "compute#metadata",
                    "fingerprint": "%016x" % random.getrandbits(64),
                    "items": list((body.get("metadata") or {}).get("items") or []),
                },
                "selfLink": self.url("zones", zone, "instances", name),
                "scheduling": {
                    "onHostMaintenance": "MIGRATE",
                    "automaticRestart": True,
                    "preemptible": False,
                },
                "cpuPlatform": "Intel Broadwell",
                "labels": dict(body.get("labels") or {}),
                "labelFingerprint": "%016x" % random.getrandbits(64),
                "startRestricted": False,
                "deletionProtection": bool(body.get("deletionProtection")),
                "fingerprint": "%016x" % random.getrandbits(64),
            }
            self.instances[(zone, name)] = {
                "body": instance,
                "created": now,
                "deleting_until": None,
                "forced_status": None,
                "cpus": MACHINE_TYPES[machine],
                "external": sum(len(n.get("accessConfigs") or []) for n in body["networkInterfaces"]),
                "disk_gb": float(disk.get("diskSizeGb", 10)),
                "sent_body": body,
            }
            return self.public(self._new_operation(zone, "insert", name))

    def _async_failure(self, zone: str, body: dict):
        """The error an accepted insert will end with, or ``None``."""
        machine = body["machineType"].rsplit("/", 1)[-1]
        if machine not in MACHINE_TYPES:
            return (
                "INVALID_FIELD_VALUE",
                "Invalid value for field 'resource.machineType': '%s'. Machine type with name '%s' does "
                "not exist in zone '%s'." % (body["machineType"], machine, zone),
                400,
                "BAD REQUEST",
            )
        image = (body["disks"][0].get("initializeParams") or {}).get("sourceImage", "")
        if image.split("/compute/v1/")[-1] not in IMAGES:
            return ("RESOURCE_NOT_FOUND", "The resource '%s' was not found" % image, 404, "NOT FOUND")
        region = region_of(zone)
        used = self.usage(region)
        wanted = {
            "INSTANCES": 1,
            "CPUS": MACHINE_TYPES[machine],
            "IN_USE_ADDRESSES": sum(len(n.get("accessConfigs") or []) for n in body["networkInterfaces"]),
        }
        for metric, amount in wanted.items():
            limit = self.quotas[region][metric]
            if amount and used[metric] + amount > limit:
                return (
                    "QUOTA_EXCEEDED",
                    "Quota '%s' exceeded.  Limit: %.1f in region %s." % (metric, limit, region),
                    403,
                    "FORBIDDEN",
                )
        return None

    def get_instance(self, zone: str, name: str) -> dict:
        with self.lock:
            self._advance()
            record = self._instance_record(zone, name)
            return self._view(record)

    def _view(self, record) -> dict:
        body = dict(record["body"])
        if record["deleting_until"] is not None:
            body["status"] = "STOPPING"
        elif record["forced_status"]:
            body["status"] = record["forced_status"]
        return body

    def delete_instance(self, zone: str, name: str) -> dict:
        with self.lock:
            self._advance()
            record = self._instance_record(zone, name)
            if record["body"].get("deletionProtection"):
                raise ApiError(
                    400,
                    "Invalid resource usage: 'Resource cannot be deleted if it's protected against "
                    "deletion.'.",
                    "resourceInUseByAnotherResource",
                )
            if record["deleting_until"] is None:
                record["deleting_until"] = time.time() + self.timing.deletion
            return self.public(self._new_operation(zone, "delete", name, duration=self.timing.deletion))

    def start_instance(self, zone: str, name: str, verb: str = "start") -> dict:
        """``instances.start`` (a TERMINATED VM) or ``instances.resume`` (a SUSPENDED one): it
        goes through STAGING to RUNNING again, like a fresh boot."""
        wanted = {"start": "TERMINATED", "resume": "SUSPENDED"}[verb]
        with self.lock:
            self._advance()
            record = self._instance_record(zone, name)
            status = self._view(record)["status"]
            if status != wanted:
                raise ApiError(
                    400,
                    "The resource 'projects/%s/zones/%s/instances/%s' is not ready (%s)"
                    % (self.project, zone, name, status),
                    "resourceNotReady",
                )
            record["forced_status"] = None
            record["created"] = time.time() - self.timing.provisioning
            record["body"]["status"] = "STAGING"
            return self.public(self._new_operation(zone, verb, name))

    def aggregated_instances(
        self, filter_text: str, max_results: int, page_token: str, partial: bool
    ) -> dict:
        with self.lock:
            self._advance()
            try:
                predicate = compile_filter(filter_text)
            except FilterError as exc:
                raise ApiError(
                    400, "Invalid value for field 'filter': '%s'. %s" % (filter_text, exc), "invalid"
                ) from None
            if self.unreachable and not partial:
                raise ApiError(
                    503,
                    "The service is currently unavailable: zones %s" % ", ".join(sorted(self.unreachable)),
                    "backendError",
                )
            matched = []
            for zone in self.zones:
                if zone in self.unreachable:
                    continue
                for (z, _n), record in sorted(self.instances.items()):
                    if z == zone:
                        view = self._view(record)
                        if predicate(view):
                            matched.append((zone, view))
            start = _page_start(page_token)
            size = max_results or 500
            page = matched[start : start + size]
            items = {}
            for zone in self.zones:
                scope = "zones/%s" % zone
                if zone in self.unreachable:
                    items[scope] = {
                        "warning": {
                            "code": "UNREACHABLE",
                            "message": "Scope '%s' is unreachable." % scope,
                            "data": [{"key": "scope", "value": scope}],
                        }
                    }
                    continue
                found = [view for z, view in page if z == zone]
                if found:
                    items[scope] = {"instances": found}
                else:
                    items[scope] = {
                        "warning": {
                            "code": "NO_RESULTS_ON_PAGE",
                            "message": "There are no results for scope '%s' on this page." % scope,
                            "data": [{"key": "scope", "value": scope}],
                        }
                    }
            out = {
                "kind": "compute#instanceAggregatedList",
                "id": "projects/%s/aggregated/instances" % self.project,
                "items": items,
                "selfLink": self.url("aggregated", "instances"),
            }
            if start + size < len(matched):
                out["nextPageToken"] = str(start + size)
            if partial and self.unreachable:
                out["unreachables"] = ["zones/%s" % z for z in sorted(self.unreachable)]
            return out

    # -- operations ------------------------------------------------------------------------

    def get_operation(self, zone: str, name: str) -> dict:
        with self.lock:
            self._advance()
            op = self.operations.get((zone, name))
            if op is None:
                raise self._not_found("zones", zone, "operations", name)
            return self.public(op)

    def list_operations(self, zone: str, filter_text: str, max_results: int, page_token: str) -> dict:
        with self.lock:
            self._advance()
            self._check_zone(zone)
            try:
                predicate = compile_filter(filter_text)
            except FilterError as exc:
                raise ApiError(
                    400, "Invalid value for field 'filter': '%s'. %s" % (filter_text, exc), "invalid"
                ) from None
            ops = sorted(
                (self.public(op) for (z, _n), op in self.operations.items() if z == zone),
                key=lambda o: o["name"],
            )
            ops = [op for op in ops if predicate(op)]
            start = _page_start(page_token)
            size = max_results or 500
            out = {
                "kind": "compute#operationList",
                "id": "projects/%s/zones/%s/operations" % (self.project, zone),
                "items": ops[start : start + size],
                "selfLink": self.url("zones", zone, "operations"),
            }
            if start + size < len(ops):
                out["nextPageToken"] = str(start + size)
            return out

    def delete_operation(self, zone: str, name: str) -> None:
        with self.lock:
            if self.operations.pop((zone, name), None) is None:
                raise self._not_found("zones", zone, "operations", name)

    # -- firewalls and regions -------------------------------------------------------------

    def _global_operation(self, op_type: str, name: str) -> dict:
        """A firewall rule's operation: it runs like a zone operation and ends with
        ``firewall_failure`` when a test set it (a rule accepted, then refused)."""
        now = time.time()
        op_name = "operation-%d-%016x" % (int(now * 1000), random.getrandbits(64))
        error, self.firewall_failure = self.firewall_failure, None
        op = {
            "kind": "compute#operation",
            "id": str(next(self._ids)),
            "name": op_name,
            "operationType": op_type,
            "targetLink": self.url("global", "firewalls", name),
            "targetId": str(next(self._ids)),
            "selfLink": self.url("global", "operations", op_name),
            **self._lifecycle(now, self.timing.operation, error),
        }
        self.global_operations[op_name] = op
        return self.public(op)

    def get_global_operation(self, name: str) -> dict:
        with self.lock:
            self._advance()
            op = self.global_operations.get(name)
            if op is None:
                raise self._not_found("global", "operations", name)
            return self.public(op)

    def get_firewall(self, name: str) -> dict:
        with self.lock:
            rule = self.firewalls.get(name)
            if rule is None:
                raise self._not_found("global", "firewalls", name)
            return dict(rule)

    def insert_firewall(self, body: dict) -> dict:
        with self.lock:
            name = body.get("name", "")
            if not name or not body.get("allowed"):
                raise ApiError(
                    400, "Invalid value for field 'resource.name': ''. Must be specified.", "invalid"
                )
            if name in self.firewalls:
                raise ApiError(
                    409,
                    "The resource 'projects/%s/global/firewalls/%s' already exists" % (self.project, name),
                    "alreadyExists",
                )
            rule = dict(body)
            rule.update(
                kind="compute#firewall",
                id=str(next(self._ids)),
                creationTimestamp=_rfc3339(time.time()),
                selfLink=self.url("global", "firewalls", name),
                network=BASE + "/" + body.get("network", "").split("/compute/v1/")[-1],
            )
            self.firewalls[name] = rule
            return self._global_operation("insert", name)

    def patch_firewall(self, name: str, body: dict) -> dict:
        with self.lock:
            if name not in self.firewalls:
                raise self._not_found("global", "firewalls", name)
            self.firewalls[name].update({k: v for k, v in body.items() if k not in ("name", "network")})
            return self._global_operation("patch", name)

    def get_region(self, region: str) -> dict:
        with self.lock:
            self._advance()
            if region not in self.quotas:
                raise self._not_found("regions", region)
            used = self.usage(region)
            return {
                "kind": "compute#region",
                "id": str(1000 + sorted(self.quotas).index(region)),
                "name": region,
                "description": region,
                "status": "UP",
                "zones": [self.url("zones", z) for z in self.zones if region_of(z) == region],
                "quotas": [
                    {"metric": metric, "limit": limit, "usage": used.get(metric, 0.0)}
                    for metric, limit in sorted(self.quotas[region].items())
                ],
                "selfLink": self.url("regions", region),
                "supportsPzs": False,
            }

    # -- test controls ---------------------------------------------------------------------

    def protect(self, zone: str, name: str, protected: bool = True) -> None:
        """Set ``deletionProtection`` as ``instances.setDeletionProtection`` would."""
        with self.lock:
            self.instances[(zone, name)]["body"]["deletionProtection"] = protected

    def force_status(self, zone: str, name: str, status: str) -> None:
        with self.lock:
            self.instances[(zone, name)]["forced_status"] = status

    def put_unmarked(self, zone: str, name: str) -> None:
        """An instance someone else made: no managed labels."""
        with self.lock:
            now = time.time()
            self.instances[(zone, name)] = {
                "body": {
                    "kind": "compute#instance",
                    "id": str(next(self._ids)),
                    "creationTimestamp": _rfc3339(now),
                    "name": name,
                    "status": "RUNNING",
                    "zone": self.url("zones", zone),
                    "machineType": self.url("zones", zone, "machineTypes", "e2-small"),
                    "networkInterfaces": [{"networkIP": str(next(self._internal)), "accessConfigs": []}],
                    "labels": {"team": "someone-else"},
                    "selfLink": self.url("zones", zone, "instances", name),
                },
                "created": now - 3600,
                "deleting_until": None,
                "forced_status": "RUNNING",
                "cpus": 2,
                "external": 0,
                "disk_gb": 10.0,
                "sent_body": {},
            }

    def leftovers(self, zone: str, name: str) -> list:
        """What still exists of an instance: itself, a disk of its name, an address it holds."""
        with self.lock:
            self._advance()
            found = []
            record = self.instances.get((zone, name))
            if record is not None:
                found.append("instance %s (%s)" % (name, self._view(record)["status"]))
                found += [
                    "address %s" % a["natIP"]
                    for n in record["body"]["networkInterfaces"]
                    for a in n.get("accessConfigs") or []
                    if a.get("natIP")
                ]
                found += [
                    "disk %s" % d["source"].rsplit("/", 1)[-1] for d in record["body"].get("disks") or []
                ]
            if (zone, name) in self.disks:
                found.append("disk %s (detached)" % name)
            return found

    def remove(self, zone: str, name: str) -> None:
        with self.lock:
            self.instances.pop((zone, name), None)
