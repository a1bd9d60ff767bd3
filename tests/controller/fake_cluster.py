"""In-memory stand-ins for the manager's collaborators: the API (with resourceVersions and 409s),
the informer's cache and the executor, so the manager's wiring is table-tested without a server.

``FakeKube`` keeps one object per key and bumps ``resourceVersion`` on every write, refusing a
status write whose resourceVersion is stale with a 409, as the API server does. ``FakeExecutor``
answers each action with a function of the action and can edit objects while "the run" goes on.
"""

from __future__ import annotations

import copy
import time

from egress_proxies_controller import api
from egress_proxies_controller.kube.client import Conflict
from egress_proxies_controller.kube.own_writes import OwnWrites
from egress_proxies_controller.proxy.reconciler import Answer
from kubernetes.client.exceptions import ApiException


class FakeKube:
    def __init__(self):
        self.objects = {}
        self.events = []  # (key, type, reason, message)
        self.status_writes = []  # (key, status)
        self.secrets = {}  # (namespace, name) -> {key: bytes}
        self.gets = []  # keys read with get_proxy
        self._rv = 100

    def _bump(self, obj: dict) -> dict:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        return obj

    def put(self, obj: dict) -> dict:
        """Create or edit an object as a user would (spec edits bump the generation)."""
        obj = copy.deepcopy(obj)
        key = "%s/%s" % (obj["metadata"]["namespace"], obj["metadata"]["name"])
        old = self.objects.get(key)
        if old is not None and old["spec"] != obj["spec"]:
            obj["metadata"]["generation"] = int(old["metadata"].get("generation") or 1) + 1
        self.objects[key] = self._bump(obj)
        return copy.deepcopy(self.objects[key])

    def get(self, key: str) -> dict | None:
        return copy.deepcopy(self.objects.get(key))

    def get_proxy(self, namespace: str, name: str) -> dict | None:
        """The API server's answer to a GET: the whole object (the informer's cache is trimmed)."""
        self.gets.append("%s/%s" % (namespace, name))
        return self.get("%s/%s" % (namespace, name))

    def write_status(self, obj, status):
        """The status subresource's replace: guarded by ``obj``'s resourceVersion, never retried."""
        key, stored = self._guarded(obj)
        if stored is None or status == (obj.get("status") or {}):
            return None
        stored["status"] = copy.deepcopy(status)
        self._bump(stored)
        self.status_writes.append((key, copy.deepcopy(status)))
        return copy.deepcopy(stored)

    def set_finalizer(self, obj, present):
        """The finalizer patch: guarded by ``obj``'s resourceVersion, never retried."""
        finalizers = [f for f in obj["metadata"].get("finalizers", []) if f != api.FINALIZER]
        if (api.FINALIZER in (obj["metadata"].get("finalizers") or [])) == present:
            return obj
        key, stored = self._guarded(obj)
        if stored is None:
            return None
        if present:
            finalizers.append(api.FINALIZER)
        stored["metadata"]["finalizers"] = finalizers
        if not present and stored["metadata"].get("deletionTimestamp"):
            del self.objects[key]
            return None
        return copy.deepcopy(self._bump(stored))

    def _guarded(self, obj: dict) -> tuple:
        """(key, the stored object or None when gone); ``Conflict`` when ``obj`` is stale."""
        key = "%s/%s" % (obj["metadata"]["namespace"], obj["metadata"]["name"])
        stored = self.objects.get(key)
        if stored is not None and obj["metadata"]["resourceVersion"] != stored["metadata"]["resourceVersion"]:
            raise Conflict(key)
        return key, stored

    def event(self, obj, event_type, reason, message, component):
        key = "%s/%s" % (obj["metadata"]["namespace"], obj["metadata"]["name"])
        self.events.append((key, event_type, reason, message))

    def secret_value(self, namespace, name, key):
        import base64

        raw = self.secrets.get((namespace, name), {}).get(key)
        if isinstance(raw, Exception):
            raise raw
        if raw is None:
            raise LookupError("cloud-init Secret %s/%s has no key %r" % (namespace, name, key))
        try:
            return base64.b64decode(base64.b64encode(raw)).decode("utf-8")
        except UnicodeDecodeError:
            raise LookupError(
                "cloud-init Secret %s/%s key %r is not UTF-8 text" % (namespace, name, key)
            ) from None


class FakeInformer:
    """The cache the manager reads: a view of ``FakeKube`` (always current, like a fast watch:
    never behind the controller's own writes)."""

    def __init__(self, kube: FakeKube):
        self.kube = kube
        self.own_writes = OwnWrites()

    def get(self, key):
        return self.kube.get(key)

    def snapshot(self, key):
        return self.get(key)

    def cache_keys(self):
        return list(self.kube.objects)


class FakeExecutor:
    def __init__(self, answer, during=None):
        self.answer = answer  # (key, action, fields) -> Answer
        self.during = during  # called once the run "started", e.g. to edit an object
        self.calls = []

    def execute(self, actions, create_fields, on_answer=None):
        self.calls.append(dict(actions))
        answers = {}
        fields = {}
        for key, action in actions.items():
            if action.op == "create":
                resolved = create_fields.get(key, {})
                if isinstance(resolved, LookupError):
                    answers[key] = Answer(ok=False, error_class="transient", message=str(resolved))
                else:
                    fields[key] = resolved
        if self.during is not None:
            self.during()
        for key, action in actions.items():
            if key not in answers:
                answers[key] = self.answer(key, action, fields.get(key))
        return answers


def proxy_object(name: str = "p1", namespace: str = "ns", uid: str = "uid-1", **spec) -> dict:
    return {
        "metadata": {
            "namespace": namespace,
            "name": name,
            "uid": uid,
            "generation": 1,
            "finalizers": [api.FINALIZER],
            "annotations": {},
            "resourceVersion": "1",
        },
        "spec": dict({"provider": "local", "port": 3128}, **spec),
        "status": {},
    }


def conflict() -> ApiException:
    return ApiException(status=409, reason="Conflict")


def settle(manager, seconds: float = 30.0) -> list:
    """Do what the manager's workers do, in this thread: reconcile the keys due now, then each
    key an answer brings back, until no call waits, runs or waits to be applied. Returns the
    keys reconciled, in order."""
    end, handled = time.monotonic() + seconds, []
    while time.monotonic() < end:
        keys = manager.queue.pop_due(100, 0)
        if keys:
            manager.process(keys)
            handled += keys
        elif not manager.busy():
            return handled
        else:
            time.sleep(0.002)
    raise AssertionError("the manager did not settle within %.0fs" % seconds)
