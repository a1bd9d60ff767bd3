"""What a run needs besides its actions: each create's module fields.

They are resolved from the object the create was planned from BEFORE the run starts (placement,
port, the auth Secret's credentials, cloud-init), so the executor never calls back into the
controller while ansible runs. A field that cannot be resolved (a missing Secret, an API timeout)
is that item's ``LookupError``, which the executor answers as a Transient failure of that item
only. The values carry secrets: they are handed to the executor's 0600 payload, never logged.
"""

from __future__ import annotations

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from . import auth_secret
from . import spec as spec_mod
from .reconciler import CREATE, Proxy

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.placement import CRD_KEYS


def resolve(kube, group: dict) -> dict:
    """``{key: (Action, object)}`` -> ``{key: fields or LookupError}`` for the creates in it,
    each Secret the group names read once (``SecretsOnce``)."""
    resolved, reads = {}, SecretsOnce(kube)
    for key, (action, obj) in group.items():
        if action.op != CREATE:
            continue
        try:
            resolved[key] = create_fields(reads, obj)
        except LookupError as exc:
            resolved[key] = exc
    return resolved


class SecretsOnce:
    """``kube`` for one group's fields: each Secret's keys read with one ``get``, however many
    creates of the group name it. A Running Proxy with auth is polled as a create (its module
    syncs the credentials), so a poll round of 500 Proxies sharing one auth Secret read it 500
    times; now once. Held for one ``resolve`` only: the next round reads it again, so a changed
    Secret is seen as soon as before. A failed read fails every item naming that Secret alike."""

    def __init__(self, kube):
        self.kube = kube
        self._reads = {}  # what was read (namespace, name, keys...) -> the answer, or the exception

    def secret_values(self, namespace: str, name: str, keys, what: str = "cloud-init") -> dict:
        read = (namespace, name, tuple(keys), what)
        return dict(self._once(read, lambda: self.kube.secret_values(namespace, name, keys, what=what)))

    def secret_value(self, namespace: str, name: str, key: str) -> str:
        return self._once((namespace, name, key), lambda: self.kube.secret_value(namespace, name, key))

    def _once(self, read: tuple, call):
        """``call()``'s answer, made once for ``read``; its exception raised for every asker."""
        if read not in self._reads:
            try:
                self._reads[read] = call()
            except Exception as exc:  # the same answer for every item of the group
                self._reads[read] = exc
        answer = self._reads[read]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def get_proxy(self, namespace: str, name: str):
        return self.kube.get_proxy(namespace, name)


def create_fields(kube, obj: dict) -> dict:
    """Per-create module fields from ``obj``, cloud-init resolved (never logged). Any failure
    reading what it needs is ``LookupError``: that item only."""
    proxy = Proxy.from_object(obj)
    placement = proxy.spec.placement
    fields = {
        "namespace": proxy.namespace,
        "proxy_name": proxy.name,
        # The instance belongs to this Proxy: where the backend is the cluster itself (the
        # kubernetes provider), its Pod gets an OwnerReference, so Kubernetes' garbage
        # collector removes it with the Proxy. Playbooks never ask: their uid is no Proxy's.
        "owner_reference": True,
        "port": proxy.spec.port,
        "placement": {field: placement.get(key, "") for field, key in CRD_KEYS.items()},
    }
    if proxy.spec.auth_secret:
        fields["auth"] = auth_secret.credentials(kube, proxy.namespace, proxy.spec.auth_secret)
    if proxy.spec.cloud_init_digest:
        fields["cloud_init"] = inline_cloud_init(kube, obj, proxy)
    elif proxy.spec.cloud_init_secret:
        name, secret_key = proxy.spec.cloud_init_secret
        try:
            fields["cloud_init"] = kube.secret_value(proxy.namespace, name, secret_key)
        except LookupError:
            raise
        except Exception as exc:  # API timeouts, connection errors: this Proxy retries
            raise LookupError(
                "cloud-init Secret %s/%s: %s" % (proxy.namespace, name, type(exc).__name__)
            ) from None
    return fields


def inline_cloud_init(kube, obj: dict, proxy: Proxy) -> str:
    """The inline text: from ``obj`` when it carries it (an object the API server just
    answered), else read from the API server (the informer's cache keeps only its digest)."""
    if ((obj.get("spec") or {}).get("cloudInit") or {}).get("inline"):
        return spec_mod.inline_cloud_init(obj, proxy.spec.cloud_init_digest)
    try:
        fresh = kube.get_proxy(proxy.namespace, proxy.name)
    except Exception as exc:  # API timeouts, connection errors: this Proxy retries
        raise LookupError("reading spec.cloudInit.inline: %s" % type(exc).__name__) from None
    if fresh is None or (fresh.get("metadata") or {}).get("uid") != proxy.uid:
        raise LookupError("the Proxy is gone")
    return spec_mod.inline_cloud_init(fresh, proxy.spec.cloud_init_digest)
