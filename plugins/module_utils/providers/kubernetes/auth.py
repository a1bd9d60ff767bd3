# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The proxy's password Secret next to its Pod (``pod.build_secret``), kept as asked.

Created after the Pod, which owns it like the ConfigMap (the garbage collector removes it with
the Pod). A rotation updates it in place: the kubelet refreshes the mounted file, and Squid's
``basic_ncsa_auth`` rereads a password file whose modification time changed, so the Pod keeps
running. A Pod's volumes cannot change, so a Pod built without the Secret cannot gain it (nor
lose it) in place: that needs a replacement, and is refused as Permanent saying so.
"""

from __future__ import annotations

import base64

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import pod as podlib
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import remove, sdk
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.classify import (
    proves_missing,
    status_of,
)


def _line(secret) -> str:
    raw = (secret.data or {}).get(podlib.AUTH_KEY) or ""
    try:
        return base64.b64decode(raw).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return ""


def read(core, name: str, namespace: str, timeout):
    """The Secret, or ``None`` when the API server proves it missing."""
    try:
        return core.read_namespaced_secret(name, namespace, _request_timeout=timeout())
    except sdk.ApiException as exc:
        if proves_missing(exc, "secrets", name):
            return None
        raise


def up_to_date(secret, req, pod_uid: str) -> bool:
    owners = [ref.uid for ref in secret.metadata.owner_references or ()]
    return owners == [pod_uid] and req.auth.matches(_line(secret))


def volume_refusal(pod, auth) -> str:
    """Why ``auth`` cannot be applied to this Pod in place, or ``""``."""
    has = podlib.has_auth_volume(pod)
    if auth is not None and not has:
        return (
            "Pod %s was created without auth; adding it needs a replacement (state: absent, then present)"
            % (pod.metadata.name)
        )
    if auth is None and has:
        return (
            "Pod %s was created with auth; removing it needs a replacement (state: absent, then present)"
            % (pod.metadata.name)
        )
    return ""


def ensure(core, req, namespace: str, installation: str, pod_uid: str, timeout, fail) -> bool:
    """Create the Secret, or bring an existing one of this proxy up to date; whether it changed.
    ``fail(message)`` builds the Permanent error for a Secret of another uid."""
    body = podlib.build_secret(req, namespace, installation, pod_uid, req.auth.passwd_line())
    try:
        core.create_namespaced_secret(namespace, body, _request_timeout=timeout())
        return True
    except sdk.ApiException as exc:
        code, reason, _message = status_of(exc)
        if (code, reason) != (409, "AlreadyExists"):
            raise
    current = core.read_namespaced_secret(req.name, namespace, _request_timeout=timeout())
    owner_uid = (current.metadata.labels or {}).get(names.LABEL_UID, "")
    if owner_uid != req.uid:
        raise fail(
            "Secret %s/%s exists and belongs to uid %r, not %s" % (namespace, req.name, owner_uid, req.uid)
        )
    if up_to_date(current, req, pod_uid):
        return False
    body["metadata"]["resourceVersion"] = current.metadata.resource_version
    core.replace_namespaced_secret(req.name, namespace, body, _request_timeout=timeout())
    return True


def refused(provider_name: str, provider_id: str, message: str) -> errors.ProviderError:
    return errors.permanent("sync_auth", provider_name, provider_id, message)


def delete_ours(core, name: str, namespace: str, timeout) -> None:
    """Delete the password Secret of that name only when it carries our managed mark: a Secret
    someone else made under the same name is never touched (absent: nothing to do)."""
    current = read(core, name, namespace, timeout)
    if current is None or not names.is_managed(current.metadata.labels or {}):
        return
    remove.delete_now(core.delete_namespaced_secret, "secrets", name, namespace, timeout)
