"""subject.py: which answers are about the object asked for (issue 28 §5), case by case."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import subject
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.classify import classify

BASE = "https://compute.googleapis.com/compute/v1/projects/"
ZONE_URL = BASE + "p/zones/us-central1-a"
SELF = ZONE_URL + "/instances/proxy-a"


@pytest.mark.parametrize(
    "item",
    [
        {"name": "proxy-a", "zone": ZONE_URL, "selfLink": SELF},
        {"name": "proxy-a", "zone": ZONE_URL},
        {"name": "proxy-a", "zone": "us-central1-a"},  # a bare zone name
        {"name": "proxy-a", "zone": "projects/p/zones/us-central1-a"},
    ],
)
def test_the_instance_asked_for_is_accepted(item):
    assert subject.instance(item, "p", "us-central1-a", "proxy-a") is item


@pytest.mark.parametrize(
    "item",
    [
        {},
        [],
        {"name": "proxy-b", "zone": ZONE_URL},
        {"name": "proxy-a"},  # no zone: cannot tell
        {"name": "proxy-a", "zone": BASE + "p/zones/us-central1-b"},
        {"name": "proxy-a", "zone": BASE + "q/zones/us-central1-a"},
        {"name": "proxy-a", "zone": ZONE_URL, "selfLink": BASE + "q/zones/us-central1-a/instances/proxy-a"},
        {"name": "proxy-a", "zone": ZONE_URL, "selfLink": ZONE_URL + "/instances/proxy-b"},
        {"name": "proxy-a", "zone": 7},
    ],
    ids=[
        "empty",
        "not-an-object",
        "other-name",
        "no-zone",
        "other-zone",
        "other-project",
        "selflink-other-project",
        "selflink-other-name",
        "zone-not-a-string",
    ],
)
def test_any_other_answer_is_wrong_subject_and_transient(item):
    with pytest.raises(subject.WrongSubject) as exc_info:
        subject.instance(item, "p", "us-central1-a", "proxy-a")
    assert classify(exc_info.value) == errors.TRANSIENT


def test_a_zone_operation_must_target_the_instance():
    ok = {"name": "op-1", "targetLink": SELF, "zone": ZONE_URL}
    assert subject.zone_operation(ok, "p", "us-central1-a", "proxy-a") is ok
    for bad in ({"name": "op-1"}, dict(ok, targetLink=ZONE_URL + "/instances/proxy-b"), {"targetLink": SELF}):
        with pytest.raises(subject.WrongSubject):
            subject.zone_operation(bad, "p", "us-central1-a", "proxy-a")


def test_named_objects_and_operations_must_carry_the_name_asked_for():
    rule = {"name": "ep-x", "selfLink": BASE + "p/global/firewalls/ep-x"}
    assert subject.named("firewall rule", rule, "p", "ep-x", "firewalls") is rule
    with pytest.raises(subject.WrongSubject):
        subject.named("firewall rule", dict(rule, name="other"), "p", "ep-x", "firewalls")
    with pytest.raises(subject.WrongSubject):
        subject.operation({"name": "op-2"}, "p", "op-1")
