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
    """``{key: (Action, object)}`` -> ``{key: fields or LookupError}`` for the creates in it."""
    resolved = {}
    for key, (action, obj) in group.items():
        if action.op != CREATE:
            continue
        try:
            resolved[key] = create_fields(kube, obj)
        except LookupError as exc:
            resolved[key] = exc
    return resolved


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
