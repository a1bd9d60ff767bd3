# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Server-side apply of a list of Kubernetes objects, and the waits a deployment needs.

Called by the ``kube_apply`` module (which the ``controller`` role uses to install the
controller's manifests). Guarantees: objects are applied in the given order (and deleted in
reverse); ``changed`` is true only when the API server stored a change (the resourceVersion
moved), or, in check mode, when a server-side dry run differs from the live object; results
name each object but never carry its body (a Secret's data never reaches the output); with
``wait``, a CustomResourceDefinition is Established and a Deployment rolled out before the next
object is applied. Any API failure raises ``ApplyError`` naming the object.

Why the plain ``kubernetes`` client and not kubernetes.core: that collection is not installable
where the tests run (no Galaxy server), and the collection already depends on the client.
"""

from __future__ import annotations

import time

try:
    from kubernetes import config as k8s_config
    from kubernetes.client import ApiClient
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import NotFoundError

    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    KUBERNETES_IMPORT_ERROR = "the kubernetes Python client is required (pip install kubernetes)"

    class NotFoundError(Exception):  # type: ignore[no-redef]
        """Stand-in: never raised without the library."""


POLL_SECONDS = 1.0
# Fields the API server owns: two reads of an unchanged object may differ in them.
_VOLATILE_METADATA = ("managedFields", "resourceVersion", "generation", "creationTimestamp", "uid")


class ApplyError(Exception):
    """An object could not be applied, deleted or waited for; the message names it."""


def label(doc: dict) -> str:
    meta = doc.get("metadata") or {}
    where = "%s/%s" % (meta["namespace"], meta.get("name")) if meta.get("namespace") else meta.get("name")
    return "%s %s" % (doc.get("kind"), where)


def validate(definitions: list) -> None:
    """Every definition names apiVersion, kind and metadata.name; raises ``ApplyError``."""
    for index, doc in enumerate(definitions):
        if not isinstance(doc, dict):
            raise ApplyError("definitions[%d]: must be a mapping" % index)
        for key in ("apiVersion", "kind"):
            if not isinstance(doc.get(key), str) or not doc[key]:
                raise ApplyError("definitions[%d].%s: required" % (index, key))
        meta = doc.get("metadata")
        if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
            raise ApplyError("definitions[%d].metadata.name: required" % index)


def client(kubeconfig: str | None, context: str | None):
    """A DynamicClient for the kubeconfig (and context), else the default kubeconfig, else the
    in-cluster service account."""
    if KUBERNETES_IMPORT_ERROR:
        raise ApplyError(KUBERNETES_IMPORT_ERROR)
    try:
        if kubeconfig or context:
            api = k8s_config.new_client_from_config(config_file=kubeconfig, context=context)
        else:
            try:
                api = k8s_config.new_client_from_config()
            except k8s_config.ConfigException:
                k8s_config.load_incluster_config()
                api = ApiClient()
    except Exception as exc:
        raise ApplyError("cannot load cluster credentials: %s" % exc) from exc
    return DynamicClient(api)


def _strip(obj: dict) -> dict:
    obj = dict(obj)
    obj.pop("status", None)
    meta = dict(obj.get("metadata") or {})
    for key in _VOLATILE_METADATA:
        meta.pop(key, None)
    obj["metadata"] = meta
    return obj


class Applier:
    def __init__(self, dyn, field_manager: str, force: bool, check_mode: bool, wait_timeout: float):
        self.dyn = dyn
        self.field_manager = field_manager
        self.force = force
        self.check_mode = check_mode
        self.wait_timeout = wait_timeout

    def _resource(self, doc: dict):
        try:
            return self.dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        except Exception as exc:
            raise ApplyError(
                "%s: the API server does not serve %s: %s" % (label(doc), doc["apiVersion"], exc)
            )

    def _get(self, resource, doc: dict):
        meta = doc["metadata"]
        try:
            return resource.get(name=meta["name"], namespace=meta.get("namespace")).to_dict()
        except NotFoundError:
            return None
        except Exception as exc:
            raise ApplyError("%s: read failed: %s" % (label(doc), _reason(exc)))

    def apply(self, doc: dict, wait: bool) -> dict:
        resource = self._resource(doc)
        before = self._get(resource, doc)
        meta = doc["metadata"]
        kwargs = {"field_manager": self.field_manager, "force_conflicts": self.force}
        if self.check_mode:
            kwargs["dry_run"] = "All"
        try:
            after = self.dyn.server_side_apply(
                resource, body=doc, name=meta["name"], namespace=meta.get("namespace"), **kwargs
            ).to_dict()
        except Exception as exc:
            raise ApplyError("%s: apply failed: %s" % (label(doc), _reason(exc)))
        if before is None:
            changed, action = True, "created"
        elif self.check_mode:
            changed = _strip(before) != _strip(after)
            action = "updated" if changed else "unchanged"
        else:
            changed = before["metadata"]["resourceVersion"] != after["metadata"]["resourceVersion"]
            action = "updated" if changed else "unchanged"
        if wait and not self.check_mode:
            self._wait_ready(resource, doc)
        return {
            "kind": doc["kind"],
            "name": meta["name"],
            "namespace": meta.get("namespace") or "",
            "changed": changed,
            "action": action,
        }

    def delete(self, doc: dict, wait: bool) -> dict:
        resource = self._resource(doc)
        meta = doc["metadata"]
        result = {"kind": doc["kind"], "name": meta["name"], "namespace": meta.get("namespace") or ""}
        if self._get(resource, doc) is None:
            return dict(result, changed=False, action="absent")
        if not self.check_mode:
            try:
                resource.delete(name=meta["name"], namespace=meta.get("namespace"))
            except NotFoundError:
                return dict(result, changed=False, action="absent")
            except Exception as exc:
                raise ApplyError("%s: delete failed: %s" % (label(doc), _reason(exc)))
            if wait:
                self._until(doc, lambda: self._get(resource, doc) is None, "gone")
        return dict(result, changed=True, action="deleted")

    def _wait_ready(self, resource, doc: dict) -> None:
        kind = doc["kind"]
        if kind == "CustomResourceDefinition":
            self._until(doc, lambda: _established(self._get(resource, doc)), "Established")
        elif kind == "Deployment":
            self._until(doc, lambda: _rolled_out(doc, self._get(resource, doc)), "rolled out")

    def _until(self, doc: dict, probe, what: str) -> None:
        end = time.monotonic() + self.wait_timeout
        while not probe():
            if time.monotonic() >= end:
                raise ApplyError("%s: not %s within %gs" % (label(doc), what, self.wait_timeout))
            time.sleep(POLL_SECONDS)


def _established(obj) -> bool:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _rolled_out(doc: dict, obj) -> bool:
    """What ``kubectl rollout status`` waits for; a Deployment past its progress deadline raises."""
    if obj is None:
        return False
    status = obj.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
            raise ApplyError("%s: rollout failed: %s" % (label(doc), cond.get("message")))
    if obj["metadata"].get("generation", 0) > status.get("observedGeneration", 0):
        return False
    wanted = (obj.get("spec") or {}).get("replicas", 1)
    updated = status.get("updatedReplicas", 0)
    return (
        updated >= wanted
        and status.get("replicas", 0) <= updated  # no old replica left
        and status.get("availableReplicas", 0) >= updated
    )


def _reason(exc: Exception) -> str:
    status = getattr(exc, "status", None)
    summary = getattr(exc, "summary", None)
    if status:
        return "HTTP %s %s" % (status, summary() if callable(summary) else exc)
    return str(exc)


def run(
    definitions: list,
    *,
    state: str,
    kubeconfig,
    context,
    field_manager: str,
    force: bool,
    wait: bool,
    wait_timeout: float,
    check_mode: bool,
) -> list:
    """Apply (or delete, in reverse order) every definition; returns one result per object."""
    validate(definitions)
    applier = Applier(client(kubeconfig, context), field_manager, force, check_mode, wait_timeout)
    if state == "absent":
        return list(reversed([applier.delete(doc, wait) for doc in reversed(definitions)]))
    return [applier.apply(doc, wait) for doc in definitions]
