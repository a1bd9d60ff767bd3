"""A scriptable stand-in for ``ComputeAPI`` (the gcp provider's seam), for unit tests.

It keeps instances, zone operations, firewalls and regions as REST-shaped dicts, records every
call with the timeout it got, and raises queued errors (real ``google.api_core`` exceptions) on
demand, so each branch of the provider can be reached without HTTP.
"""

from __future__ import annotations

import collections

from google.api_core import exceptions as api_exceptions


def api_error(code: int, reason: str = "", message: str = "injected"):
    """A real google.api_core exception, as the REST transport builds it from an error body."""
    errors = [{"message": message, "domain": "global", "reason": reason}] if reason else []
    return api_exceptions.from_http_status(code, message, errors=errors)


PROJECT = "my-project"


def missing(*path: str):
    """The API's own 404 for ``projects/<PROJECT>/<path>``, worded as the real service words it."""
    return api_error(
        404, "notFound", "The resource 'projects/%s/%s' was not found" % (PROJECT, "/".join(path))
    )


def instance(
    name="proxy-a",
    zone="us-central1-a",
    status="RUNNING",
    nat="203.0.113.7",
    internal="10.0.0.2",
    labels=None,
    uid_meta=None,
    created="2026-11-29T01:02:03.456-08:00",
):
    item = {
        "name": name,
        "zone": "https://compute.example/compute/v1/projects/%s/zones/%s" % (PROJECT, zone),
        "status": status,
        "creationTimestamp": created,
        "labels": labels if labels is not None else {},
        "networkInterfaces": [
            {
                "networkIP": internal,
                "accessConfigs": [{"type": "ONE_TO_ONE_NAT", "natIP": nat}] if nat is not None else [],
            }
        ],
    }
    if uid_meta is not None:
        item["metadata"] = {"items": [{"key": "proxy-operator-uid", "value": uid_meta}]}
    return item


class FakeSeam:
    def __init__(self):
        self.calls = []
        self.instances = {}
        self.operations = collections.defaultdict(list)
        self.firewalls = {}
        self.regions = {}
        self.pages = []  # aggregated-list pages returned in order (each a dict)
        self.errors = collections.defaultdict(list)  # method -> exceptions raised first
        self.closed = False
        self.inserted = []

    def fail(self, method: str, *exceptions) -> None:
        self.errors[method].extend(exceptions)

    def _enter(self, method: str, *args, timeout):
        self.calls.append((method, args, timeout))
        if self.errors[method]:
            raise self.errors[method].pop(0)

    def names(self) -> list:
        return [c[0] for c in self.calls]

    def close(self) -> None:
        self.calls.append(("close", (), None))
        self.closed = True

    def insert_instance(self, zone, body, timeout):
        self._enter("insert_instance", zone, body, timeout=timeout)
        self.inserted.append((zone, body))
        return {"name": "operation-1", "status": "RUNNING", "operationType": "insert"}

    def get_instance(self, zone, name, timeout):
        self._enter("get_instance", zone, name, timeout=timeout)
        if (zone, name) not in self.instances:
            raise missing("zones", zone, "instances", name)
        return self.instances[(zone, name)]

    def delete_instance(self, zone, name, timeout):
        self._enter("delete_instance", zone, name, timeout=timeout)
        if (zone, name) not in self.instances:
            raise missing("zones", zone, "instances", name)
        return {"name": "operation-del", "status": "RUNNING", "operationType": "delete"}

    def start_instance(self, zone, name, verb, timeout):
        self._enter("start_instance", zone, name, verb, timeout=timeout)
        self.instances[(zone, name)]["status"] = "STAGING"
        return {"name": "operation-start", "status": "RUNNING", "operationType": verb}

    def list_instances_page(self, filter_, max_results, page_token, timeout):
        self._enter("list_instances_page", filter_, max_results, page_token, timeout=timeout)
        return self.pages.pop(0) if self.pages else {"items": {}}

    def list_zone_operations(self, zone, filter_, max_results, timeout):
        self._enter("list_zone_operations", zone, filter_, max_results, timeout=timeout)
        return list(self.operations[zone])

    def delete_zone_operation(self, zone, name, timeout):
        self._enter("delete_zone_operation", zone, name, timeout=timeout)
        self.operations[zone] = [o for o in self.operations[zone] if o["name"] != name]

    def get_firewall(self, name, timeout):
        self._enter("get_firewall", name, timeout=timeout)
        if name not in self.firewalls:
            raise missing("global", "firewalls", name)
        return self.firewalls[name]

    def insert_firewall(self, body, timeout):
        self._enter("insert_firewall", body, timeout=timeout)
        self.firewalls[body["name"]] = body
        return {"name": "operation-fw", "status": "DONE"}

    def patch_firewall(self, name, body, timeout):
        self._enter("patch_firewall", name, body, timeout=timeout)
        self.firewalls[name] = body
        return {"name": "operation-fw2", "status": "DONE"}

    def get_region(self, region, timeout):
        self._enter("get_region", region, timeout=timeout)
        if region not in self.regions:
            raise missing("regions", region)
        return self.regions[region]
