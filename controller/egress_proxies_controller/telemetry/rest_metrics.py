"""client-go's REST client metrics for every API request the controller makes.

``rest_client_requests_total{code,method,host}`` and ``rest_client_request_duration_seconds
{verb,host}`` are what controller-runtime exports and what dashboards for operators graph: with
them the API server's load from this controller (requests per second, by verb) and the time its
reconciles spend writing (the API-write phase of a burst) can be read off /metrics.
"""

from __future__ import annotations

import time
import urllib.parse

from prometheus_client import Counter, Histogram

BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)


class RestClientMetrics:
    def __init__(self, registry):
        self.requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        )
        self.latency = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            registry=registry,
            buckets=BUCKETS,
        )

    def instrument(self, api_client) -> None:
        """Count and time every request ``api_client`` sends (a watch: until its headers)."""
        rest = api_client.rest_client
        send = rest.request
        host = urllib.parse.urlparse(api_client.configuration.host).netloc

        def request(method, url, *args, **kwargs):
            started = time.monotonic()
            code = "<error>"  # client-go's label when no response came
            try:
                response = send(method, url, *args, **kwargs)
                code = str(getattr(response, "status", "") or "<error>")
                return response
            except Exception as exc:
                code = str(getattr(exc, "status", None) or "<error>")
                raise
            finally:
                self.requests.labels(code, method, host).inc()
                self.latency.labels(method, host).observe(time.monotonic() - started)

        rest.request = request
