"""The one place the Kubernetes client is imported: clients and API calls the controller makes.

Status goes through the status subresource with optimistic concurrency (resourceVersion) and
is retried on conflict by re-reading the object; the finalizer is changed the same way. Events
are best effort: a failed Event never fails a reconcile.
"""

from __future__ import annotations

import datetime
import logging

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from . import api

log = logging.getLogger("egress_proxies_controller.kube")

CONFLICT_RETRIES = 5


def load(kubeconfig: str | None = None, context: str | None = None) -> client.ApiClient:
    if kubeconfig or context:
        return config.new_client_from_config(config_file=kubeconfig, context=context)
    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.ApiClient()


class Kube:
    def __init__(self, api_client: client.ApiClient, timeout: float = 30.0):
        self.api_client = api_client
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)
        self.coordination = client.CoordinationV1Api(api_client)
        self.timeout = timeout

    # -- Proxy objects -----------------------------------------------------------------

    def list_proxies(self, namespace: str | None, **kwargs) -> dict:
        if namespace:
            return self.custom.list_namespaced_custom_object(
                api.GROUP, api.VERSION, namespace, api.PROXY_PLURAL, **kwargs
            )
        return self.custom.list_cluster_custom_object(api.GROUP, api.VERSION, api.PROXY_PLURAL, **kwargs)

    def get_proxy(self, namespace: str, name: str) -> dict | None:
        try:
            return self.custom.get_namespaced_custom_object(
                api.GROUP, api.VERSION, namespace, api.PROXY_PLURAL, name, _request_timeout=self.timeout
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def write_status(self, obj: dict, compute) -> dict | None:
        """Replace the status with ``compute(obj)`` (a dict, or None for no change), retrying
        conflicts on a fresh read. Returns the object written, or None when gone/unchanged."""
        meta = obj["metadata"]
        for _attempt in range(CONFLICT_RETRIES):
            status = compute(obj)
            if status is None or status == (obj.get("status") or {}):
                return None
            body = dict(obj, status=status)
            try:
                return self.custom.replace_namespaced_custom_object_status(
                    api.GROUP,
                    api.VERSION,
                    meta["namespace"],
                    api.PROXY_PLURAL,
                    meta["name"],
                    body,
                    _request_timeout=self.timeout,
                )
            except ApiException as exc:
                if exc.status == 404:
                    return None
                if exc.status != 409:
                    raise
            obj = self.get_proxy(meta["namespace"], meta["name"])
            if obj is None:
                return None
            meta = obj["metadata"]
        raise RuntimeError(
            "status of %s/%s: conflict after %d retries" % (meta["namespace"], meta["name"], CONFLICT_RETRIES)
        )

    def set_finalizer(self, obj: dict, present: bool) -> dict | None:
        meta = obj["metadata"]
        for _attempt in range(CONFLICT_RETRIES):
            finalizers = list(meta.get("finalizers") or [])
            has = api.FINALIZER in finalizers
            if has == present:
                return obj
            finalizers = (
                [*finalizers, api.FINALIZER] if present else [f for f in finalizers if f != api.FINALIZER]
            )
            patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
            try:
                return self.custom.patch_namespaced_custom_object(
                    api.GROUP,
                    api.VERSION,
                    meta["namespace"],
                    api.PROXY_PLURAL,
                    meta["name"],
                    patch,
                    _request_timeout=self.timeout,
                )
            except ApiException as exc:
                if exc.status == 404:
                    return None
                if exc.status != 409:
                    raise
            obj = self.get_proxy(meta["namespace"], meta["name"])
            if obj is None:
                return None
            meta = obj["metadata"]
        raise RuntimeError("finalizer of %s/%s: conflict after retries" % (meta["namespace"], meta["name"]))

    def secret_value(self, namespace: str, name: str, key: str) -> str:
        """A Secret's value; ``LookupError`` with a readable reason when it cannot be had."""
        import base64

        try:
            secret = self.core.read_namespaced_secret(name, namespace, _request_timeout=self.timeout)
        except ApiException as exc:
            raise LookupError("cloud-init Secret %s/%s: %s" % (namespace, name, exc.reason)) from None
        data = secret.data or {}
        if key not in data:
            raise LookupError("cloud-init Secret %s/%s has no key %r" % (namespace, name, key))
        return base64.b64decode(data[key]).decode("utf-8")

    def event(self, obj: dict, event_type: str, reason: str, message: str, component: str) -> None:
        meta = obj["metadata"]
        now = datetime.datetime.now(datetime.UTC)
        body = client.CoreV1Event(
            metadata=client.V1ObjectMeta(generate_name=meta["name"] + ".", namespace=meta["namespace"]),
            involved_object=client.V1ObjectReference(
                api_version="%s/%s" % (api.GROUP, api.VERSION),
                kind=api.PROXY_KIND,
                name=meta["name"],
                namespace=meta["namespace"],
                uid=meta.get("uid"),
                resource_version=meta.get("resourceVersion"),
            ),
            reason=reason,
            message=message[:1024],
            type=event_type,
            first_timestamp=now,
            last_timestamp=now,
            count=1,
            source=client.V1EventSource(component=component),
            reporting_component=component,
        )
        try:
            self.core.create_namespaced_event(meta["namespace"], body, _request_timeout=self.timeout)
        except Exception as exc:  # best effort: an Event never fails a reconcile
            log.warning("event %s on %s/%s not recorded: %s", reason, meta["namespace"], meta["name"], exc)
