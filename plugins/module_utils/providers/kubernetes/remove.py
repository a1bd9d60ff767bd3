# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Delete only what is ours: read the Pod and its ConfigMap, check their marks, then delete each
on the condition that it is still the object that was read.

Kubernetes cannot delete on a label condition, but it can on ``preconditions``: the uid and
resourceVersion read with the labels. So a Pod replaced or relabelled between the read and the
delete answers 409 Conflict and is read again (at most ``ATTEMPTS`` times, then Transient),
never deleted unchecked. The cost is one GET per object before its DELETE.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import kube_answers as answers
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import ownership
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import sdk
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.classify import (
    proves_missing,
    status_of,
)

ATTEMPTS = 3


class Foreign(Exception):
    """The object is not ours to delete (the message says whose it is)."""


class Changed(Exception):
    """The object changed between the read and the conditional delete, every attempt."""


def _read(read, kind: str, namespace: str, name: str, timeout):
    """The object's metadata, or ``None`` when the API proves it missing."""
    try:
        found = read(name, namespace, _request_timeout=timeout())
    except sdk.ApiException as exc:
        if proves_missing(exc, kind, name):
            return None
        raise
    answers.about(found.metadata, kind, namespace, name)  # another object's answer: not this one
    return found.metadata


def delete_now(remove, kind: str, name: str, namespace: str, timeout) -> None:
    """``remove`` (a ``delete_namespaced_*`` call) with no grace, dependents in the background;
    an answer that proves the object missing is success."""
    try:
        remove(
            name,
            namespace,
            grace_period_seconds=0,
            propagation_policy="Background",
            _request_timeout=timeout(),
        )
    except sdk.ApiException as exc:
        if not proves_missing(exc, kind, name):
            raise


def check(meta, what: str, installation: str, provider: str = "") -> None:
    """Raise ``Foreign`` unless the object's labels mark it ours: managed, this installation's,
    and made by ``provider`` (or by no recorded provider: made before the mark existed)."""
    labels = meta.labels or {}
    refusal = ownership.foreign(
        what,
        names.is_managed(labels),
        labels.get(names.LABEL_INSTALL) or "",
        installation,
        labels.get(names.LABEL_PROVIDER) or "",
        provider,
    )
    if refusal:
        raise Foreign(refusal)


def delete_ours(core, namespace: str, name: str, installation: str, timeout, provider: str = "") -> None:
    """Pod and ConfigMap: both are read and checked before either is deleted (``provider``: the
    deleting provider, which never deletes another provider's on a shared namespace)."""
    steps = (
        ("pods", "Pod", core.read_namespaced_pod, core.delete_namespaced_pod),
        ("configmaps", "ConfigMap", core.read_namespaced_config_map, core.delete_namespaced_config_map),
    )
    for _attempt in range(ATTEMPTS):
        found = []
        for kind, label, read, remove in steps:
            meta = _read(read, kind, namespace, name, timeout)
            if meta is not None:
                check(meta, "%s %s/%s" % (label, namespace, name), installation, provider)
                found.append((kind, remove, meta))
        try:
            for kind, remove, meta in found:
                _delete_if_unchanged(remove, kind, namespace, name, meta, timeout)
            return
        except Changed:
            continue
    raise Changed(
        "%s/%s changed between each read and its conditional delete (%d attempts)"
        % (namespace, name, ATTEMPTS)
    )


def _delete_if_unchanged(remove, kind: str, namespace: str, name: str, meta, timeout) -> None:
    options = sdk.k8s_client.V1DeleteOptions(
        propagation_policy="Background",
        preconditions=sdk.k8s_client.V1Preconditions(uid=meta.uid, resource_version=meta.resource_version),
    )
    try:
        remove(name, namespace, body=options, _request_timeout=timeout())
    except sdk.ApiException as exc:
        if proves_missing(exc, kind, name):
            return
        if status_of(exc)[0] == 409:
            raise Changed(str(exc)) from exc
        raise
