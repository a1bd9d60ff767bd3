"""instance_items: every item validated before the first backend call (issue 15)."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import UsageError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import (
    INSTANCE_OPTIONS,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.instance_items import (
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


def test_absent_items_given_only_distinct_ids_are_not_duplicates(conf):
    """Two deletes by id carry no name: they once both keyed on the empty name and were refused
    as one instance given twice (the module tests' own cleanup by ids failed on that)."""
    items = _items(conf, state="absent", instances=[{"id": "local/p"}, {"id": "local/q"}])
    assert [i.id for i in items] == ["local/p", "local/q"]


AUTH = {"username": "crawler", "password": "pw-secret-1"}


def test_auth_becomes_the_request_auth_and_batch_items_inherit_it(conf):
    (item,) = _items(conf, uid="x", auth=AUTH)
    assert item.auth.username == "crawler" and item.auth.password == "pw-secret-1"
    assert "pw-secret-1" not in repr(item)
    first, second = _items(
        conf, auth=AUTH, instances=[{"uid": "a"}, {"uid": "b", "auth": dict(AUTH, username="o")}]
    )
    assert first.auth.username == "crawler" and second.auth.username == "o"


@pytest.mark.parametrize(
    "auth,fragment",
    [
        ("user:pw", "auth: must be a mapping with username and password, not 'user:pw'"),
        ({"username": "a:b", "password": "x"}, "auth.username: 'a:b' contains ':'"),
        ({"username": "a\nb", "password": "x"}, "auth.username: 'a\\nb' contains whitespace or control"),
        ({"username": None, "password": "x"}, "auth.username: required"),
        ({"username": "a", "password": None}, "auth.password: required, a string (not nothing)"),
        ({"username": "a", "password": 12345}, "auth.password: required, a string (not a int)"),
        ({"username": "a", "password": "x\x00y"}, "auth.password: contains control characters"),
        ({"username": "a", "password": "x", "realm": "r"}, "auth.'realm': unknown key"),
    ],
)
def test_bad_auth_is_refused_naming_the_field(conf, auth, fragment):
    with pytest.raises(UsageError) as caught:
        _items(conf, uid="x", auth=auth)
    assert fragment in str(caught.value)
    assert "12345" not in str(caught.value) and "x\\x00y" not in str(caught.value)


def test_a_provider_without_auth_refuses_it_before_anything(tmp_path):
    """Every built-in type renders auth now (kvm2 in its seed); a type that cannot is refused
    before anything, and deleting needs no auth."""
    block = {
        "sshKeyFile": "/etc/egress-proxies/kvm/id_ed25519",
        "insecureIgnoreHostKey": True,
        "machineTypes": {"small": {"vcpus": 1, "memoryMiB": 1024}},
        "hosts": [{"name": "hv", "address": "127.0.0.1"}],
    }
    cloud = config.parse({"providers": [{"name": "eu", "type": "kvm2", "kvm2": block}]})
    placement = {"machine_type": "small", "image": "https://images.example/base.qcow2"}
    (accepted,) = _items(
        cloud, provider="eu", uid="x", auth=AUTH, cloud_init="#cloud-config\n{}\n", placement=placement
    )
    assert accepted.auth is not None
    with pytest.raises(UsageError, match=r"cloud_init: required with auth"):
        _items(cloud, provider="eu", uid="x", auth=AUTH, placement=placement)

    built = registry.build(cloud.find("eu"), cloud.installation)
    built.supports_auth = False  # a type without auth support

    def resolve(_name):
        return built

    with pytest.raises(UsageError, match=r"auth: provider eu \(type kvm2\) cannot render proxy auth"):
        items_from_params(_params(provider="eu", uid="x", auth=AUTH), cloud, resolve=resolve)
    (absent,) = items_from_params(
        _params(provider="eu", uid="x", auth=AUTH, state="absent"), cloud, resolve=resolve
    )
    assert absent.state == "absent"
