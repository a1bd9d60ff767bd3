# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The kubernetes client behind a guarded import, and the one place an API client is built.

Only this provider package imports the SDK. Where it is missing, the collection still imports;
building a client then raises ``SDKMissing`` (classified Permanent: installing the library
fixes it). ``api_client`` builds the client from the block's connection options, the
kubeconfig or the in-cluster service account (connection.py) without contacting the API
server, and disables the client's own retries: the caller's Deadline bounds
every call through ``_request_timeout``.
"""

from __future__ import annotations

import traceback

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import yaml_reader
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
    require_readable,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import (
    connection,
    traced_pool,
)

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config

    # Re-exported, unused here: classify, check and provider catch sdk.ApiException and friends.
    from kubernetes.client.exceptions import ApiException  # pylint: disable=unused-import
    from kubernetes.config.config_exception import ConfigException  # pylint: disable=unused-import

    KUBERNETES_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - exercised by ansible-test's import sanity test
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    k8s_client = None
    k8s_config = None

    class ApiException(Exception):  # type: ignore[no-redef]
        """Stand-in: never raised without the library."""

        status = 0
        reason = ""
        body = ""

    class ConfigException(Exception):  # type: ignore[no-redef]
        """Stand-in: never raised without the library."""


try:
    import urllib3.exceptions as urllib3_exceptions
except ImportError:  # pragma: no cover - urllib3 comes with the kubernetes client
    urllib3_exceptions = None


__all__ = [
    "KUBERNETES_IMPORT_ERROR",
    "ApiException",
    "ConfigException",
    "SDKMissing",
    "api_client",
    "is_timeout",
    "is_transport_error",
    "k8s_client",
    "k8s_config",
    "require_sdk",
]


POOL_SIZE = 64  # connections kept open (the proxy_instance/proxy_info ``concurrency`` ceiling)


class SDKMissing(Exception):
    """The kubernetes Python client is not installed where the module runs."""


def require_sdk() -> None:
    if KUBERNETES_IMPORT_ERROR is not None:
        raise SDKMissing(
            "the kubernetes Python library is required by the kubernetes provider; install it on "
            "the host that runs the modules (pip install kubernetes)"
        )


def _source(block) -> str:
    """What was being read, for a ConfigException's message (the client's never says)."""
    if block.kubeconfig or block.context:
        return "kubeconfig %s%s" % (
            block.kubeconfig or "(default)",
            ", context %s" % block.context if block.context else "",
        )
    return "in-cluster config, then the default kubeconfig"


def _load(block, configuration) -> None:
    """kubernetes.core's order: host with a token or client certificate needs nothing loaded;
    else a kubeconfig or context names the kubeconfig; else the in-cluster config, falling
    back to the default kubeconfig (``$KUBECONFIG``, else ``~/.kube/config``)."""
    if connection.has_credentials(block):
        return
    kube = {"context": block.context, "client_configuration": configuration, "persist_config": False}
    if block.kubeconfig or block.context:
        k8s_config.load_kube_config(config_file=block.kubeconfig, **kube)
        return
    try:
        k8s_config.load_incluster_config(client_configuration=configuration)
    except ConfigException as in_cluster:
        try:
            k8s_config.load_kube_config(config_file=None, **kube)
        except ConfigException as default:
            raise ConfigException("%s; %s" % (in_cluster, default)) from default


def api_client(block):
    """An ``ApiClient`` for the block's connection options (connection.py), over what the
    kubeconfig or the in-cluster config give."""
    require_sdk()
    configuration = k8s_client.Configuration()
    for path, what in (
        (block.kubeconfig, "kubeconfig"),
        (block.ca_cert, "caCert"),
        (block.client_cert, "clientCert"),
        (block.client_key, "clientKey"),
    ):
        if path:
            require_readable(path, what)  # missing: Transient (helpers/credential_files.py)
    try:
        _load(block, configuration)
    except ConfigException as exc:
        raise ConfigException("%s: %s" % (_source(block), exc)) from exc
    except Exception as exc:  # PyYAML's own message quotes the line, token and all (issue 40)
        text = yaml_reader.yaml_error_text(exc)
        if text is None:
            raise
        raise ConfigException("%s: %s" % (_source(block), text)) from None
    for attribute, value in connection.overrides(block).items():
        setattr(configuration, attribute, value)
    configuration.retries = 0  # no hidden retries: the Deadline decides how long a call may take
    # The client keeps 5 connections per CPU; a batch's threads (``concurrency``, 16 by default)
    # each need one, and urllib3 closes what does not fit: a new TLS handshake per call beyond them.
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, POOL_SIZE)
    client = k8s_client.ApiClient(configuration)
    traced_pool.trace_requests(client)  # a child span per API request (traced_pool.py)
    return client


def is_timeout(exc: BaseException) -> bool:
    """A socket or read timeout surfaced by urllib3 (directly or as a retry's reason)."""
    if urllib3_exceptions is None:
        return False
    if isinstance(exc, urllib3_exceptions.MaxRetryError):
        exc = exc.reason or exc
    if isinstance(exc, urllib3_exceptions.NewConnectionError):
        return False  # urllib3 derives it from ConnectTimeoutError, but "refused" is no timeout
    return isinstance(exc, urllib3_exceptions.TimeoutError | TimeoutError)


def is_transport_error(exc: BaseException) -> bool:
    return urllib3_exceptions is not None and isinstance(exc, urllib3_exceptions.HTTPError)
