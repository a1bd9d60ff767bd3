"""The fake Compute Engine API's filter language (tests/fakes/gcp/filters.py): the two syntaxes
the provider sends, and the refusals the real API makes too (mixed syntaxes, bad input)."""

from __future__ import annotations

import pytest
from fakes.gcp.filters import FilterError, compile_filter

INSTANCE = {
    "name": "proxy-a",
    "status": "RUNNING",
    "labels": {"proxy-operator-managed": "true", "proxy-operator-install": "prod"},
    "scheduling": {"preemptible": False},
}
OPERATION = {
    "operationType": "insert",
    "status": "DONE",
    "targetLink": "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a/instances/proxy-a",
}

CASES = [
    ("", INSTANCE, True),
    ('labels.proxy-operator-managed = "true"', INSTANCE, True),
    ("labels.proxy-operator-managed = true", INSTANCE, True),
    ('(labels.proxy-operator-managed = "true") AND (labels.proxy-operator-install = "prod")', INSTANCE, True),
    ('(labels.proxy-operator-managed = "true") (labels.proxy-operator-install = "prod")', INSTANCE, True),
    (
        '(labels.proxy-operator-managed = "true") AND (labels.proxy-operator-install = "other")',
        INSTANCE,
        False,
    ),
    ('labels.proxy-operator-install != "prod"', INSTANCE, False),
    ("labels.missing = x", INSTANCE, False),
    ("labels.proxy-operator-managed:*", INSTANCE, True),
    ("labels.team:*", INSTANCE, False),
    ("scheduling.preemptible = false", INSTANCE, True),
    ('targetLink eq ".*/zones/us-central1-a/instances/proxy-a"', OPERATION, True),
    ('targetLink eq ".*/instances/proxy-"', OPERATION, False),  # the regex must match the whole field
    ('targetLink eq ".*/zones/us-central1-b/instances/proxy-a"', OPERATION, False),
    ("(operationType eq insert) (targetLink eq '.*/proxy-a')", OPERATION, True),
    ("(operationType ne insert) (targetLink eq '.*/proxy-a')", OPERATION, False),
]


@pytest.mark.parametrize(("text", "resource", "expected"), CASES, ids=[c[0] or "<empty>" for c in CASES])
def test_filter_table(text, resource, expected):
    assert compile_filter(text)(resource) is expected


@pytest.mark.parametrize(
    "text",
    [
        '(status = "RUNNING") (name eq proxy-.*)',  # mixed syntaxes
        "(status = RUNNING) OR (status = STAGING)",  # OR: not supported by the fake
        "(status = RUNNING",
        "status ~ RUNNING",
        "name eq (unclosed",
        "labels.x:value",
    ],
)
def test_filters_the_fake_refuses(text):
    with pytest.raises(FilterError):
        compile_filter(text)
