"""The API calls of the pool reconciler: pools, their member Proxies and what they publish.

Secrets, Services and EndpointSlices are read as the API server's JSON (``_preload_content=False``):
the client's models would be built only to be turned back into dicts, at several times the CPU.
Each answer is checked as the kubernetes provider checks its own (``helpers/kube_answers.py``):
of the kind asked for and about the object asked for, else ``MalformedAnswer``, never read as
that object or as its absence.

Writes are guarded by resourceVersion and never retried here: a conflict (409) raises
``Conflict`` (the snapshot was stale) and the pool controller requeues the pool, whose next
reconcile decides from the newer object its watch delivers. A member is deleted with a
UID precondition, so only the very Proxy the plan saw (one the pool controls) can go.
"""

from __future__ import annotations

import base64

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from .. import api
from ..kube.client import ApiException, client, guarded
from .model import POOL_FINALIZER, POOL_LABEL, POOL_PLURAL

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import kube_answers

#: asks the API server for an object's metadata only: a Secret's data never crosses the wire
METADATA_ONLY = {"Accept": "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"}


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
        """Add or remove the pool's finalizer; None when the pool is gone, ``Conflict`` when it
        changed since ``obj`` was read."""
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
        """One write of the pool ``meta`` names; None when the pool is gone, ``Conflict`` when it
        changed since ``meta`` was read."""
        return guarded(
            "ProxyPool %s/%s" % (meta["namespace"], meta["name"]),
            lambda: write(
                api.GROUP,
                api.VERSION,
                meta["namespace"],
                POOL_PLURAL,
                meta["name"],
                body,
                _request_timeout=self.timeout,
            ),
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
        """The Secret ``name`` as a dict, or None when absent (the Services and EndpointSlices
        pools publish are read from their informers: RBAC grants no get of them)."""
        reader = {"Secret": self.core.read_namespaced_secret}[kind]
        try:
            return _read_one(reader, kind, namespace, name, _request_timeout=self.timeout)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list_services(self, namespace: str | None, **kwargs):
        """The informer's lister of the Services pools publish (``_list_published``)."""
        return self._list_published(
            self.core.list_namespaced_service,
            self.core.list_service_for_all_namespaces,
            "ServiceList",
            namespace,
            kwargs,
        )

    def list_endpoint_slices(self, namespace: str | None, **kwargs):
        """The informer's lister of the EndpointSlices pools publish (``_list_published``)."""
        return self._list_published(
            self.discovery.list_namespaced_endpoint_slice,
            self.discovery.list_endpoint_slice_for_all_namespaces,
            "EndpointSliceList",
            namespace,
            kwargs,
        )

    @staticmethod
    def _list_published(namespaced, every, list_kind: str, namespace: str | None, kwargs: dict):
        """Those with the pool label, in ``namespace`` or every namespace: a list answers a dict
        (the API server's JSON, checked to be a ``list_kind``), a watch (the client's ``Watch``
        asks with ``watch=True``) the raw response it streams."""
        kwargs["label_selector"] = POOL_LABEL
        args = (namespace,) if namespace else ()
        lister = namespaced if namespace else every
        if kwargs.get("watch"):
            return lister(*args, **kwargs)
        return kube_answers.read(lister, *args, kind=list_kind, **kwargs)

    def create(self, kind: str, namespace: str, body: dict) -> dict:
        """The object created, as the API server's JSON (its version: an own write)."""
        creator = {
            "Secret": self.core.create_namespaced_secret,
            "Service": self.core.create_namespaced_service,
            "EndpointSlice": self.discovery.create_namespaced_endpoint_slice,
        }[kind]
        answer = kube_answers.read(creator, namespace, body, kind=kind, _request_timeout=self.timeout)
        return _about(answer, kind, namespace, body["metadata"]["name"])

    def replace(self, kind: str, namespace: str, body: dict) -> dict:
        """The object written, guarded by ``body``'s resourceVersion: ``Conflict`` when the
        object changed since it was read."""
        replacer = {
            "Secret": self.core.replace_namespaced_secret,
            "EndpointSlice": self.discovery.replace_namespaced_endpoint_slice,
        }[kind]
        name = body["metadata"]["name"]
        return guarded(
            "%s %s/%s" % (kind, namespace, name),
            lambda: _about(
                kube_answers.read(replacer, name, namespace, body, kind=kind, _request_timeout=self.timeout),
                kind,
                namespace,
                name,
            ),
        )

    def secret_version(self, namespace: str, name: str) -> str | None:
        """The resourceVersion of Secret ``name`` (its metadata only: no value is read), None
        when it does not exist: whether an auth Secret changed since it was last read."""
        try:
            answer = _read_one(
                self.core.read_namespaced_secret,
                "PartialObjectMetadata",
                namespace,
                name,
                _request_timeout=self.timeout,
                _headers=METADATA_ONLY,
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return kube_answers.section(answer, "metadata").get("resourceVersion")

    def auth_credentials(self, namespace: str, name: str) -> tuple:
        """(username, password) from a pool template's auth Secret; LookupError (naming the
        Secret and key, never a value) when it cannot be had."""
        return self.auth_source(namespace, name)[0]

    def auth_source(self, namespace: str, name: str) -> tuple:
        """``((username, password), resourceVersion)`` of an auth Secret, both from one read:
        the version says which content the credentials are (``secret_version`` compares it)."""
        try:
            secret = _read_one(
                self.core.read_namespaced_secret, "Secret", namespace, name, _request_timeout=self.timeout
            )
        except ApiException as exc:
            raise LookupError("auth Secret %s/%s: %s" % (namespace, name, exc.reason)) from None
        except kube_answers.MalformedAnswer as exc:
            raise LookupError("auth Secret %s/%s: %s" % (namespace, name, exc)) from None
        version = kube_answers.section(secret, "metadata").get("resourceVersion")
        return _credentials(secret, namespace, name), version


def _credentials(secret: dict, namespace: str, name: str) -> tuple:
    """(username, password) from an auth Secret's data; LookupError naming the key, never a value."""
    data = secret.get("data") or {}
    out = []
    for key in ("username", "password"):
        if not data.get(key):
            raise LookupError("auth Secret %s/%s has no key %r" % (namespace, name, key))
        try:
            out.append(base64.b64decode(data[key]).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise LookupError("auth Secret %s/%s key %r is not UTF-8 text" % (namespace, name, key)) from None
    return tuple(out)


def _read_one(reader, kind: str, namespace: str, name: str, **kwargs) -> dict:
    """``reader``'s answer as the API server's JSON, checked to be the ``kind`` asked for and
    about ``namespace/name`` (``MalformedAnswer`` otherwise: never read as that object)."""
    return _about(kube_answers.read(reader, name, namespace, kind=kind, **kwargs), kind, namespace, name)


def _about(body: dict, kind: str, namespace: str, name: str) -> dict:
    """``body``, checked to be about ``namespace/name`` (``MalformedAnswer`` otherwise)."""
    kube_answers.about(kube_answers.section(body, "metadata"), kind, namespace, name)
    return body
