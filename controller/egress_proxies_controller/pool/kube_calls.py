"""The API calls of the pool reconciler: pools, their member Proxies and what they publish.

Secrets, Services and EndpointSlices are read as the API server's JSON (``_preload_content=False``):
the client's models would be built only to be turned back into dicts, at several times the CPU.

Writes are guarded by resourceVersion and never retried here: a conflict (409) means the cache
was behind, and the next tick plans again from the newer object. A member is deleted with a
UID precondition, so only the very Proxy the plan saw (one the pool controls) can go.
"""

from __future__ import annotations

import base64
import json

from .. import api
from ..kube.client import ApiException, client
from .model import POOL_FINALIZER, POOL_LABEL, POOL_PLURAL

#: the kinds a pool publishes that its loop watches, and their resources as RBAC names them (its
#: Secrets it cannot: that would take listing every Secret of the namespace)
WATCHED_KINDS = {"Service": "services", "EndpointSlice": "endpointslices"}


class PoolKube:
    def __init__(self, kube):
        self.kube = kube
        self.custom, self.core = kube.custom, kube.core
        self.discovery = client.DiscoveryV1Api(kube.api_client)
        self.timeout = kube.timeout

    def list_pools(self, namespace: str | None, **kwargs) -> dict:
        if namespace:
            return self.custom.list_namespaced_custom_object(
                api.GROUP, api.VERSION, namespace, POOL_PLURAL, **kwargs
            )
        return self.custom.list_cluster_custom_object(api.GROUP, api.VERSION, POOL_PLURAL, **kwargs)

    def set_finalizer(self, obj: dict, present: bool) -> dict | None:
        """Add or remove the pool's finalizer; None on a conflict or when the pool is gone."""
        meta = obj["metadata"]
        finalizers = [f for f in meta.get("finalizers") or [] if f != POOL_FINALIZER]
        if present:
            finalizers.append(POOL_FINALIZER)
        patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
        return self._write_pool(self.custom.patch_namespaced_custom_object, meta, patch)

    def write_status(self, obj: dict, status: dict) -> dict | None:
        return self._write_pool(
            self.custom.replace_namespaced_custom_object_status, obj["metadata"], dict(obj, status=status)
        )

    def _write_pool(self, write, meta: dict, body: dict) -> dict | None:
        """One write of the pool ``meta`` names; None on a conflict or when the pool is gone."""
        return self._tolerant(
            lambda: write(
                api.GROUP,
                api.VERSION,
                meta["namespace"],
                POOL_PLURAL,
                meta["name"],
                body,
                _request_timeout=self.timeout,
            )
        )

    def create_proxy(self, namespace: str, body: dict) -> dict:
        return self.custom.create_namespaced_custom_object(
            api.GROUP, api.VERSION, namespace, api.PROXY_PLURAL, body, _request_timeout=self.timeout
        )

    def delete_proxy(self, namespace: str, name: str, uid: str) -> dict | None:
        """Delete the member ``name`` only if it still is the object ``uid``; returns the object
        as the deletion left it (its finalizer holds it), or None when it is gone or another."""
        body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
        return self._tolerant(
            lambda: self.custom.delete_namespaced_custom_object(
                api.GROUP,
                api.VERSION,
                namespace,
                api.PROXY_PLURAL,
                name,
                body=body,
                _request_timeout=self.timeout,
            )
        )

    def delete_secret(self, namespace: str, name: str, uid: str) -> None:
        """Delete a pool's credentials copy only if it still is the object ``uid`` (gone or
        another already: nothing to do)."""
        body = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
        self._tolerant(
            lambda: self.core.delete_namespaced_secret(
                name, namespace, body=body, _request_timeout=self.timeout
            )
        )

    @staticmethod
    def _tolerant(call):
        try:
            return call()
        except ApiException as exc:
            if exc.status in (404, 409):
                return None
            raise

    # -- what a pool publishes -------------------------------------------------------------

    def read(self, kind: str, namespace: str, name: str):
        """The Secret, Service or EndpointSlice ``name`` as a dict, or None when absent."""
        reader = {
            "Secret": self.core.read_namespaced_secret,
            "Service": self.core.read_namespaced_service,
            "EndpointSlice": self.discovery.read_namespaced_endpoint_slice,
        }[kind]
        try:
            return _json(reader(name, namespace, _request_timeout=self.timeout, _preload_content=False))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def owned_lister(self, kind: str):
        """The informer's lister of the ``kind`` objects pools publish (those with the pool
        label), in ``namespace`` or every namespace: a list answers a dict, a watch (the client's
        ``Watch`` asks with ``watch=True``) the raw response it streams."""
        api_of, namespaced, every = {
            "Service": ("core", "list_namespaced_service", "list_service_for_all_namespaces"),
            "EndpointSlice": (
                "discovery",
                "list_namespaced_endpoint_slice",
                "list_endpoint_slice_for_all_namespaces",
            ),
        }[kind]

        def lister(namespace, **kwargs):
            client_api = getattr(self, api_of)
            kwargs["label_selector"] = POOL_LABEL
            if not kwargs.get("watch"):
                kwargs["_preload_content"] = False
            if namespace:
                answer = getattr(client_api, namespaced)(namespace, **kwargs)
            else:
                answer = getattr(client_api, every)(**kwargs)
            return answer if kwargs.get("watch") else _json(answer)

        return lister

    def create(self, kind: str, namespace: str, body: dict) -> None:
        creator = {
            "Secret": self.core.create_namespaced_secret,
            "Service": self.core.create_namespaced_service,
            "EndpointSlice": self.discovery.create_namespaced_endpoint_slice,
        }[kind]
        creator(namespace, body, _request_timeout=self.timeout)

    def replace(self, kind: str, namespace: str, body: dict) -> None:
        replacer = {
            "Secret": self.core.replace_namespaced_secret,
            "EndpointSlice": self.discovery.replace_namespaced_endpoint_slice,
        }[kind]
        replacer(body["metadata"]["name"], namespace, body, _request_timeout=self.timeout)

    def auth_credentials(self, namespace: str, name: str) -> tuple:
        """(username, password) from a pool template's auth Secret; LookupError (naming the
        Secret and key, never a value) when it cannot be had."""
        try:
            secret = _json(
                self.core.read_namespaced_secret(
                    name, namespace, _request_timeout=self.timeout, _preload_content=False
                )
            )
        except ApiException as exc:
            raise LookupError("auth Secret %s/%s: %s" % (namespace, name, exc.reason)) from None
        data = secret.get("data") or {}
        out = []
        for key in ("username", "password"):
            if not data.get(key):
                raise LookupError("auth Secret %s/%s has no key %r" % (namespace, name, key))
            try:
                out.append(base64.b64decode(data[key]).decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise LookupError(
                    "auth Secret %s/%s key %r is not UTF-8 text" % (namespace, name, key)
                ) from None
        return tuple(out)


def _json(response) -> dict:
    """The body of a raw (``_preload_content=False``) answer, as the API server sent it."""
    return json.loads(response.data)
