# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""A span per Kubernetes API request, at the one transport the provider's client uses.

The client sends every request through its ``RESTClientObject``'s urllib3 ``pool_manager``
(public attributes of the generated client). ``trace_requests`` wraps that one object of that
one ``ApiClient`` (nothing global is patched): each ``request`` becomes the span
``k8s.<METHOD>`` with the path's identifiers, the HTTP status and urllib3's retry count. The
URL's query (label selectors) and any userinfo are left out, and bodies never reach a span.
"""

from __future__ import annotations

import re
import urllib.parse

from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.backend_spans import backend_call

# /api/v1/namespaces/<ns>/<resource>[/<name>[/<sub>]] and /apis/<group>/<version>/...
_PATH = re.compile(
    r"^/apis?/(?:[^/]+/)?v[^/]*(?:/namespaces/(?P<namespace>[^/]+))?"
    r"(?:/(?P<resource>[^/]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?)?/?$"
)


def request_attributes(method: str, url: str) -> dict:
    """What a span may say about one request: method, server, path and its identifiers."""
    parts = urllib.parse.urlsplit(url)
    attributes = {
        "http.request.method": method.upper(),
        "server.address": parts.hostname or "",
        "server.port": parts.port,
        "url.path": parts.path,
    }
    match = _PATH.match(parts.path)
    if match:
        for group in ("namespace", "resource", "name"):
            attributes["k8s.%s" % group] = match.group(group)
        attributes["k8s.subresource"] = match.group("sub")
    return attributes


class TracedPool:
    """The client's pool manager, with ``request`` spanned; everything else passes through."""

    def __init__(self, inner):
        self._inner = inner

    def request(self, method, url, *args, **kwargs):
        attributes = request_attributes(method, url)
        with backend_call("k8s.%s" % attributes["http.request.method"], attributes) as span:
            response = self._inner.request(method, url, *args, **kwargs)
            span.set_attribute("http.response.status_code", int(getattr(response, "status", 0) or 0))
            history = getattr(getattr(response, "retries", None), "history", None) or ()
            span.set_attribute("http.request.resend_count", len(history))
            return response

    def __getattr__(self, name):
        return getattr(self._inner, name)


def trace_requests(api_client) -> bool:
    """Wrap ``api_client``'s transport; ``False`` (no child spans, nothing else changed) when this
    client version has no ``rest_client.pool_manager`` to wrap."""
    rest = getattr(api_client, "rest_client", None)
    pool = getattr(rest, "pool_manager", None)
    if pool is None or not callable(getattr(pool, "request", None)):
        return False
    if not isinstance(pool, TracedPool):
        rest.pool_manager = TracedPool(pool)
    return True
