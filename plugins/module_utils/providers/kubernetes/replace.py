# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Bringing back a Pod that has finished: delete it, wait until its name is free, create anew.

A Pod whose phase is Failed, Succeeded or Unknown, or that is being deleted, never runs again
(a Pod cannot be restarted), yet ``create`` used to adopt it on AlreadyExists, so every
``state: present`` run reported ``changed`` while it stayed Terminated. The ConfigMap (and the
password Secret) go too: they are owned by the old Pod, and the garbage collector would remove
them under the new one.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import (
    auth,
    remove,
    sdk,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.classify import (
    proves_missing,
)

POLL_SECONDS = 0.5


def free_name(core, name: str, namespace: str, deleting: bool, timeout, deadline) -> None:
    """Delete the finished Pod (unless already being deleted) and its ConfigMap, then wait,
    within ``deadline``, until the API server says the Pod is gone. ``timeout(op)`` gives each
    call its request timeout."""
    removals = [("configmaps", core.delete_namespaced_config_map)]
    if not deleting:
        removals.insert(0, ("pods", core.delete_namespaced_pod))
    for kind, delete in removals:
        remove.delete_now(delete, kind, name, namespace, timeout)
    auth.delete_ours(core, name, namespace, timeout)
    while True:
        try:
            core.read_namespaced_pod(name, namespace, _request_timeout=timeout())
        except sdk.ApiException as exc:
            if proves_missing(exc, "pods", name):
                return
            raise
        deadline.sleep(POLL_SECONDS)
