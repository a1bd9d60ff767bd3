"""instance_items: every item validated before the first backend call (issue 15)."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils import config, registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.args_common import INSTANCE_OPTIONS
from ansible_collections.crawl.egress_proxies.plugins.module_utils.errors import UsageError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.instance_items import (
    InvalidItem,
    Item,
    items_from_params,
)


@pytest.fixture
def conf(tmp_path):
    return config.parse(
        {"providers": [{"name": "local", "type": "local", "local": {"stateDir": str(tmp_path)}}]}
    )


def _params(**given) -> dict:
    params = dict.fromkeys(INSTANCE_OPTIONS)
    params.update(provider="local", instances=None)
    params.update(given)
    return params


def _items(conf, raw=None, isolate=False, **given):
    built = {}

    def resolve(name):
        built.setdefault(name, registry.build(conf.find(name), conf.installation))
        return built[name]

    params = _params(**given)
    return items_from_params(params, conf, isolate=isolate, raw=raw, resolve=resolve)


@pytest.mark.parametrize(
    "given,fragment",
    [
        (
            {"instances": [{"uid": "good"}, {"id": "../../etc", "state": "absent"}]},
            "instances[1].id: malformed",
        ),
        (
            {"instances": [{"uid": "x"}, {"uid": "x", "state": "absent"}]},
            "instances[0]: contradicts another item",
        ),
        ({"instances": [{"uid": "x"}, {"uid": "x"}]}, "instances[1]: repeats another item"),
        ({"instances": [{"uid": "a", "name": "proxy-a"}, {"uid": "b", "name": "proxy-a"}]}, "name 'proxy-a'"),
        ({"state": "absent", "instances": [{"id": "local/p"}, {"id": "local/p"}]}, "repeats"),
        ({"uid": "x", "wait_timeout": float("nan")}, "wait_timeout: nan must be more than 0"),
    ],
)
def test_a_bad_batch_raises_before_anything(conf, given, fragment):
    with pytest.raises(UsageError) as caught:
        _items(conf, **given)
    assert fragment in str(caught.value)


def test_raw_values_ansible_would_convert_are_refused(conf):
    raw = _params(uid={"a": 1}, port=True)
    with pytest.raises(UsageError) as caught:
        _items(conf, raw=raw, uid="{'a': 1}", port=1)
    assert "uid: must be a string, not <dict of 1>" in str(caught.value)
    assert "port: True is not a port" in str(caught.value)


def test_isolate_marks_every_item_of_a_duplicate_group_and_keeps_the_rest(conf):
    items = _items(
        conf, isolate=True, instances=[{"uid": "x"}, {"uid": "ok"}, {"uid": "x", "state": "absent"}]
    )
    assert [type(i) for i in items] == [InvalidItem, Item, InvalidItem]
    assert "contradicts" in items[0].message and "instances[0], instances[2]" in items[2].message
