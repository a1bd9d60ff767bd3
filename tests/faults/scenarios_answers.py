"""Backend answers from the Compute Engine fake (tests/fakes/gcp): errors the real API gives
(500, 503, 429 with Retry-After, 403 quota) and answers something in between gives (a 404 with
no body or an HTML body, a 200 with cut JSON, a list whose pages never end, a slow answer)."""

from __future__ import annotations

import contextlib
import json

from faults.scenario import Scenario

GCP = ("gcp",)


def fake_answers(**fault):
    """Inject: every matching request answered so while the fault is on."""

    @contextlib.contextmanager
    def inject(target):
        injected = target.fake.inject(times=-1, **fault)
        try:
            yield 1
        finally:
            injected.times = 0

    return inject


ENDLESS_PAGE = json.dumps(
    {"kind": "compute#instanceAggregatedList", "items": {}, "nextPageToken": "again"}
).encode()

SCENARIOS = [
    Scenario("api-500", "every request answered 500 backendError", GCP, fake_answers(status=500)),
    Scenario("api-503", "every request answered 503 unavailable", GCP, fake_answers(status=503)),
    Scenario(
        "api-429-retry-after",
        "every request answered 429 rateLimitExceeded with Retry-After: 1",
        GCP,
        fake_answers(status=429, headers={"Retry-After": "1"}),
    ),
    Scenario("api-403-quota", "every request answered 403 quotaExceeded", GCP, fake_answers(status=403)),
    Scenario(
        "api-404-no-body",
        "every request answered 404 with an empty body",
        GCP,
        fake_answers(status=404, raw=b""),
    ),
    Scenario(
        "api-404-html",
        "every request answered 404 with an HTML page (a proxy, not the API)",
        GCP,
        fake_answers(status=404, raw=b"<html><body>404 Not Found</body></html>"),
    ),
    Scenario(
        "api-200-truncated-json",
        "every GET answered 200 with JSON cut in the middle",
        GCP,
        fake_answers(status=200, method="GET", raw=b'{"kind": "compute#instance", "name": "pro'),
    ),
    Scenario(
        "api-list-pages-forever",
        "the aggregated list answers a next page token for ever",
        GCP,
        fake_answers(status=200, method="GET", path=r"^aggregated/instances$", raw=ENDLESS_PAGE),
    ),
    Scenario("api-slow", "every answer 5 s late, beyond the 3 s deadline", GCP, fake_answers(delay=5.0)),
    Scenario("api-insert-503", "instances.insert answered 503", GCP, fake_answers(status=503, method="POST")),
    Scenario(
        "api-get-500",
        "instances.get answered 500",
        GCP,
        fake_answers(status=500, method="GET", path=r"/instances/"),
    ),
    Scenario(
        "api-list-429",
        "the aggregated list answered 429",
        GCP,
        fake_answers(status=429, path=r"^aggregated/instances$"),
    ),
    Scenario(
        "api-delete-500", "instances.delete answered 500", GCP, fake_answers(status=500, method="DELETE")
    ),
    Scenario(
        "api-operations-503",
        "zone operations (the insert's wait) answered 503",
        GCP,
        fake_answers(status=503, path=r"/operations"),
    ),
]
