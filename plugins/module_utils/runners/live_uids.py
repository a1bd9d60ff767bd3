# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The UIDs of the Proxy resources that exist in a cluster: what garbage collection must keep.

Read in one list call across all namespaces. Any failure raises: GC must never run on a view
of the cluster it cannot vouch for (an empty list from a failed call would collect every
instance).
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import yaml_reader
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    KUBERNETES_IMPORT_ERROR = (
        "the kubernetes Python client is required to read live Proxy UIDs from a cluster"
    )

GROUP = "crawl.example.com"
VERSION = "v1alpha1"
PLURAL = "proxies"


def from_cluster(kubeconfig: str | None, context: str | None, timeout: float) -> list:
    """Every Proxy UID, cluster-wide; raises ``ProviderError`` (op ``list``) on any failure."""
    if KUBERNETES_IMPORT_ERROR:
        raise errors.permanent("list", "cluster", "", KUBERNETES_IMPORT_ERROR)
    try:
        if kubeconfig or context:
            api_client = k8s_config.new_client_from_config(config_file=kubeconfig, context=context)
        else:
            k8s_config.load_incluster_config()
            api_client = k8s_client.ApiClient()
    except Exception as exc:
        text = yaml_reader.yaml_error_text(exc) or str(exc)  # PyYAML's quotes the line (issue 40)
        raise errors.permanent("list", "cluster", "", "cannot load cluster credentials: %s" % text) from None
    try:
        api = k8s_client.CustomObjectsApi(api_client)
        uids, token = [], None
        while True:
            page = api.list_cluster_custom_object(
                GROUP, VERSION, PLURAL, limit=500, _continue=token, _request_timeout=timeout
            )
            uids.extend(item["metadata"]["uid"] for item in page.get("items", []))
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return uids
    except Exception as exc:
        status = getattr(exc, "status", None)
        cls = errors.PERMANENT if status in (401, 403, 404) else errors.TRANSIENT
        raise errors.wrap(cls, "list", "cluster", "", "cannot list Proxy resources: %s" % exc) from exc
    finally:
        api_client.close()
