"""The libvirt provider over the in-memory fake: every branch of create, get, delete, list,
the connection table (one dial, abandoned calls, other hosts untouched) and the check."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import time

import pytest
from fakes.libvirt_fake import FakeHost, err
from fakes.trickle_server import TrickleServer

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ProviderError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import credential_files, proxy_auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend as b,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    ids,
    metadata,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.guard import Budgets
from unit.libvirt_support import BASE, IMAGE, make, request

GIB = 1024**3


def dl(seconds=10.0):
    return Deadline(seconds)


def cancelled():
    deadline = Deadline(10)
    deadline.cancel()
    return deadline


def klass(call) -> str:
    with pytest.raises(ProviderError) as exc_info:
        call()
    return errors.class_of(exc_info.value)


def methods(host) -> list:
    return [c[1] for c in host.calls]


# -- create ----------------------------------------------------------------------------------


def test_create_builds_marks_image_overlay_seed_domain_and_starts(image_server):
    provider, dialer, hosts = make(image_server)
    req = request()
    provider_id = provider.create(req, dl())
    assert provider_id == "hosts/h1/domains/%s" % req.name
    host = hosts["h1"]
    volumes = host.volumes()
    assert set(volumes) == {
        BASE,
        BASE + ".sha256",
        *ids.instance_volumes(req.name, "kvm2"),
    }
    assert volumes[BASE]["data"] == IMAGE
    overlay = volumes[ids.overlay_volume(req.name, "kvm2")]
    assert overlay["backing"] == "/pools/default/" + BASE and overlay["capacity"] == 10 * GIB
    marks = metadata.parse_volume_json(volumes[ids.marks_volume(req.name, "kvm2")]["data"], "kvm2", req.name)
    assert (marks.uid, marks.installation, marks.managed) == ("uid-1", "inst-a", True)
    dom = host.domains[req.name]
    assert dom["state"] == b.DOMAIN_RUNNING
    assert metadata.parse_element(dom["metadata"][metadata.namespace("kvm2")]).uid == "uid-1"
    order = methods(host)
    # the marks volume is written before the image, the overlay, the seed and the domain
    first_marks = order.index("volume_create")
    assert order.index("domain_define") > first_marks
    assert dialer.dials == ["h1"]


def test_repeat_create_adopts_without_download_or_writes(image_server):
    provider, dialer, hosts = make(image_server)
    req = request()
    first = provider.create(req, dl())
    calls_before = len(hosts["h1"].calls)
    assert provider.create(req, dl()) == first
    again = methods(hosts["h1"])[calls_before:]
    assert "volume_create" not in again and "domain_define" not in again
    assert image_server.requests["/tiny.qcow2"] == 1
    assert dialer.dials == ["h1"]


def test_second_instance_reuses_the_cached_image(image_server):
    provider, _dialer, hosts = make(image_server)
    provider.create(request("a"), dl())
    provider.create(request("b"), dl())
    assert image_server.requests["/tiny.qcow2"] == 1
    assert len(hosts["h1"].domains) == 2


@pytest.mark.parametrize(
    "state", [b.DOMAIN_PAUSED, b.DOMAIN_PMSUSPENDED, b.DOMAIN_SHUTOFF, b.DOMAIN_CRASHED, b.DOMAIN_SHUTDOWN]
)
def test_repeat_create_makes_a_stopped_domain_run(image_server, state):
    provider, _dialer, hosts = make(image_server)
    req = request()
    provider.create(req, dl())
    hosts["h1"].domains[req.name]["state"] = state
    provider.create(req, dl())
    assert hosts["h1"].domains[req.name]["state"] == b.DOMAIN_RUNNING


def test_create_refuses_another_uid_and_unmarked_and_other_types_domains(image_server):
    shared = FakeHost("h1")
    kvm, _d1, _h1 = make(image_server, type_name="kvm", fake_hosts=[shared])
    kvm2, _d2, _h2 = make(image_server, type_name="kvm2", fake_hosts=[shared])
    req = request()
    kvm.create(req, dl())
    # the same name under kvm2: kvm2 does not adopt kvm's domain
    assert klass(lambda: kvm2.create(req, dl())) == errors.PERMANENT
    # another uid for the same name
    other = request("uid-2")
    other = contract.CreateRequest(name=req.name, uid="uid-2", placement=other.placement)
    assert klass(lambda: kvm.create(other, dl())) == errors.PERMANENT
    # a domain without any marks
    shared.add_domain("proxy-unmarked")
    stranger = contract.CreateRequest(name="proxy-unmarked", uid="uid-3", placement=req.placement)
    assert klass(lambda: kvm.create(stranger, dl())) == errors.PERMANENT
    assert "proxy-unmarked" in shared.domains  # untouched


def test_empty_uid_in_marks_is_never_adopted(image_server):
    """Issue 15 (docs/contract.md): an instance without a UID mark was not made by create, which
    writes the UID in the same step; adopting it hands someone's domain to this owner."""
    provider, _dialer, hosts = make(image_server)
    req = request()
    ns = metadata.namespace("kvm2")
    hosts["h1"].add_domain(req.name, b.DOMAIN_SHUTOFF, {ns: '<instance managed="true" uid="" createdAt=""/>'})
    assert klass(lambda: provider.create(req, dl())) == errors.PERMANENT
    assert hosts["h1"].domains[req.name]["state"] == b.DOMAIN_SHUTOFF  # untouched


@pytest.mark.parametrize(
    "placement_kw, fragment",
    [
        ({"zone": "nope"}, "placement.zone"),
        ({"machine": "huge"}, "placement.machine_type"),
        ({"machine": ""}, "placement.machine_type"),
        ({"image": "nope"}, "placement.image"),
        ({"image": ""}, "placement.image"),
        ({"image": "ftp://x/y"}, "placement.image"),
    ],
)
def test_bad_placement_is_permanent_before_any_dial(image_server, placement_kw, fragment):
    provider, dialer, _hosts = make(image_server)
    with pytest.raises(ProviderError) as exc_info:
        provider.create(request(**placement_kw), dl())
    assert errors.class_of(exc_info.value) == errors.PERMANENT
    assert fragment in str(exc_info.value)
    assert dialer.dials == []


def test_zone_optional_with_one_host_required_with_two(image_server):
    provider, _dialer, _hosts1 = make(image_server)
    assert provider.create(request(zone=""), dl()).startswith("hosts/h1/")
    two, dialer, _hosts = make(image_server, hosts=("h1", "h2"))
    assert klass(lambda: two.create(request(zone=""), dl())) == errors.PERMANENT
    assert dialer.dials == []
    assert two.create(request(zone="h2"), dl()).startswith("hosts/h2/")


def test_url_image_is_downloaded_without_a_digest(image_server):
    image_server.files["/other.qcow2"] = b"other image"
    provider, _dialer, hosts = make(image_server)
    provider.create(request(image=image_server.url("/other.qcow2")), dl())
    url_volumes = [v for v in hosts["h1"].volumes() if v.startswith("egress-base-url-")]
    assert len(url_volumes) == 2


@pytest.mark.parametrize("what", ["pool", "memory"])
def test_quota_exceeded_before_anything_is_created(image_server, what):
    provider, _dialer, hosts = make(image_server)
    host = hosts["h1"]
    if what == "pool":
        host.pools["default"]["available"] = 5 * GIB  # less than diskSizeGb 10
    else:
        host.memory = 128 * 1024**2  # less than the machine's 256 MiB
    assert klass(lambda: provider.create(request(), dl())) == errors.QUOTA_EXCEEDED
    assert host.volumes() == {} and host.domains == {}


def test_inactive_pool_is_permanent_missing_pool_too(image_server):
    provider, _dialer, hosts = make(image_server)
    hosts["h1"].pools["default"]["state"] = b.POOL_INACTIVE
    assert klass(lambda: provider.create(request(), dl())) == errors.PERMANENT
    hosts["h1"].pools["other"] = hosts["h1"].pools.pop("default")
    assert klass(lambda: provider.create(request(), dl())) == errors.PERMANENT


def test_sha256_mismatch_is_permanent_and_caches_nothing(image_server):
    provider, _dialer, hosts = make(image_server)
    image_server.files["/tiny.qcow2"] = IMAGE[:-1] + b"X"
    assert klass(lambda: provider.create(request(), dl())) == errors.PERMANENT
    volumes = hosts["h1"].volumes()
    assert BASE not in volumes and BASE + ".sha256" not in volumes
    assert hosts["h1"].domains == {}


def test_cut_off_download_is_transient_unmarked_and_retried_cleanly(image_server):
    provider, _dialer, hosts = make(image_server)
    image_server.files["/tiny.qcow2"] = IMAGE
    image_server.cut["/tiny.qcow2"] = len(IMAGE) // 2
    assert klass(lambda: provider.create(request(), dl())) == errors.TRANSIENT
    assert BASE + ".sha256" not in hosts["h1"].volumes()
    del image_server.cut["/tiny.qcow2"]
    provider.create(request(), dl())
    assert hosts["h1"].volumes()[BASE]["data"] == IMAGE
    assert image_server.requests["/tiny.qcow2"] == 2


def test_image_without_valid_marker_is_fetched_again_only_when_unused(image_server):
    provider, _dialer, hosts = make(image_server)
    first = provider.create(request("a"), dl())
    volumes = hosts["h1"].volumes()
    bad = b"0" * 64 + b" " + image_server.url("/tiny.qcow2").encode()
    volumes[BASE + ".sha256"]["data"] = bad
    # an overlay backs onto the base: it is never replaced under it
    assert klass(lambda: provider.create(request("b"), dl())) == errors.TRANSIENT
    assert image_server.requests["/tiny.qcow2"] == 1 and volumes[BASE + ".sha256"]["data"] == bad
    provider.delete(first, dl())  # the last user is gone: now an untrusted copy may be replaced
    provider.create(request("b"), dl())
    assert image_server.requests["/tiny.qcow2"] == 2
    assert (
        hosts["h1"]
        .volumes()[BASE + ".sha256"]["data"]
        .startswith(b"%s " % hashlib.sha256(IMAGE).hexdigest().encode())
    )


@pytest.mark.parametrize(
    "status, want", [(404, errors.PERMANENT), (403, errors.PERMANENT), (503, errors.TRANSIENT)]
)
def test_image_http_errors(image_server, status, want):
    provider, _dialer, hosts = make(image_server)
    image_server.status["/tiny.qcow2"] = status
    assert klass(lambda: provider.create(request(), dl())) == want
    assert hosts["h1"].volumes() == {}


def test_image_without_content_length_is_permanent(image_server):
    provider, _dialer, _hosts = make(image_server)
    image_server.no_length.add("/tiny.qcow2")
    assert klass(lambda: provider.create(request(), dl())) == errors.PERMANENT


def test_a_leftover_overlay_is_never_reused(image_server):
    """Issue 15: after a partial delete (the domain undefined, a volume delete failed) the next
    create reused the overlay when path and size matched: a disk on which cloud-init had already
    run with the old user-data, possibly on another base. Without its domain it is a leftover."""
    provider, _dialer, hosts = make(image_server)
    req = request()
    provider.create(req, dl())
    host = hosts["h1"]
    overlay_name = ids.overlay_volume(req.name, "kvm2")
    for change in ({"data": b"guest writes"}, {"capacity": 1 * GIB}, {"backing": "/elsewhere"}):
        del host.domains[req.name]  # undefined; the overlay stays behind
        host.volumes()[overlay_name].update(change)
        provider.create(req, dl())
        overlay = host.volumes()[overlay_name]
        assert overlay["data"] == b"", change
        assert overlay["capacity"] == 10 * GIB and overlay["backing"] == "/pools/default/" + BASE


def test_seed_is_always_rebuilt(image_server):
    provider, _dialer, hosts = make(image_server)
    req = request(cloud_init="#cloud-config\nfirst: 1\n")
    provider.create(req, dl())
    host = hosts["h1"]
    seed_name = ids.seed_volume(req.name, "kvm2")
    del host.domains[req.name]
    host.volumes()[seed_name]["data"] = b"truncated"
    provider.create(request(cloud_init="#cloud-config\nsecond: 2\n"), dl())
    assert b"second: 2" in host.volumes()[seed_name]["data"]


def test_not_found_inside_create_is_transient(image_server):
    provider, _dialer, hosts = make(image_server)
    hosts["h1"].fail["domain_start"] = err(b.ERR_NO_DOMAIN, "Domain not found")
    assert klass(lambda: provider.create(request(), dl())) == errors.TRANSIENT
    hosts["h1"].fail["volume_path"] = err(b.ERR_NO_STORAGE_VOL, "Storage volume not found")
    assert klass(lambda: provider.create(request("u2"), dl())) == errors.TRANSIENT


def test_cancelled_create_is_transient_and_creates_nothing(image_server):
    provider, _dialer, hosts = make(image_server)
    assert klass(lambda: provider.create(request(), cancelled())) == errors.TRANSIENT
    assert hosts["h1"].volumes() == {} and hosts["h1"].domains == {}


# -- get -------------------------------------------------------------------------------------


def test_get_reads_state_uid_created_at_and_address_in_source_order(image_server):
    provider, _dialer, hosts = make(image_server)
    req = request()
    provider_id = provider.create(req, dl())
    host = hosts["h1"]
    got = provider.get(provider_id, dl())
    assert (got.state, got.ip, got.uid, got.installation) == (contract.PROVISIONING, "", "uid-1", "inst-a")
    assert got.created_at is not None
    dom = host.domains[req.name]
    dom["addresses"] = {"lease": [("ipv4", "10.0.0.20")], "arp": [("ipv4", "10.0.0.30")]}
    host.fail["domain_addresses_agent"] = [err(b.ERR_AGENT_UNRESPONSIVE, "agent not connected")]
    assert provider.get(provider_id, dl()).ip == "10.0.0.20"
    dom["addresses"]["agent"] = [("ipv4", "127.0.0.1"), ("ipv4", "10.0.0.10")]
    got = provider.get(provider_id, dl())
    assert (got.state, got.ip) == (contract.RUNNING, "10.0.0.10")
    dom["addresses"] = {"arp": [("ipv4", "10.0.0.30")]}
    assert provider.get(provider_id, dl()).ip == "10.0.0.30"
    dom["state"] = b.DOMAIN_PAUSED
    got = provider.get(provider_id, dl())
    assert (got.state, got.ip) == (contract.STOPPED, "")


def test_get_not_found_only_when_the_domain_is_gone(image_server):
    provider, _dialer, hosts = make(image_server)
    provider_id = provider.create(request(), dl())
    host = hosts["h1"]
    host.fail["domain_metadata"] = err(b.ERR_RPC, "connection reset")
    assert klass(lambda: provider.get(provider_id, dl())) == errors.TRANSIENT
    host.fail["domain_state"] = err(b.ERR_NO_STORAGE_VOL, "odd")
    assert klass(lambda: provider.get(provider_id, dl())) == errors.TRANSIENT
    host.fail.clear()
    host.domains.clear()
    assert klass(lambda: provider.get(provider_id, dl())) == errors.NOT_FOUND


def test_cancelled_get_is_transient_not_provisioning(image_server):
    provider, _dialer, hosts = make(image_server)
    provider_id = provider.create(request(), dl())
    assert klass(lambda: provider.get(provider_id, cancelled())) == errors.TRANSIENT
    # cancelled while the address sources are asked: still an error, never "no address yet"
    deadline = Deadline(10)
    hosts["h1"].fail["domain_addresses_agent"] = err(b.ERR_AGENT_UNRESPONSIVE, "x")
    original = hosts["h1"].fail

    class CancelOnAgent(dict):
        def get(self, key, default=None):
            if key == "domain_addresses_lease":
                deadline.cancel()
            return original.get(key, default) if key in original else default

    hosts["h1"].fail = CancelOnAgent(original)
    assert klass(lambda: provider.get(provider_id, deadline)) == errors.TRANSIENT


def test_get_of_unmanaged_domain_reports_empty_uid(image_server):
    provider, _dialer, hosts = make(image_server)
    hosts["h1"].add_domain("proxy-stranger", b.DOMAIN_SHUTOFF)
    got = provider.get("hosts/h1/domains/proxy-stranger", dl())
    assert (got.uid, got.created_at, got.state) == ("", None, contract.STOPPED)


def test_malformed_and_unconfigured_ids_are_permanent(image_server):
    provider, dialer, _hosts = make(image_server)
    for bad in ["", "hosts/h1/domains", "hosts/h9/domains/proxy-a", "local/proxy-a"]:
        assert klass(lambda bad=bad: provider.get(bad, dl())) == errors.PERMANENT
    for bad in ["", "hosts/h1/domains"]:
        assert klass(lambda bad=bad: provider.delete(bad, dl())) == errors.PERMANENT
    assert dialer.dials == []


def test_a_host_no_longer_configured_is_not_read_and_its_delete_is_done_unreached(image_server):
    """get names the host and the configured ones; delete is done without dialling anything,
    so its Proxy can be released (its domain, untouched, is GC's once the host is back)."""
    provider, dialer, _hosts = make(image_server)
    with pytest.raises(errors.ProviderError) as caught:
        provider.get("hosts/h9/domains/proxy-a", dl())
    err = caught.value
    assert (err.error_class, err.reason) == (errors.PERMANENT, errors.REASON_HOST_NOT_CONFIGURED)
    assert "'h9'" in str(err) and "h1" in str(err)
    provider.delete("hosts/h9/domains/proxy-a", dl())
    assert dialer.dials == []


# -- delete ----------------------------------------------------------------------------------


def test_delete_removes_domain_and_volumes_keeps_a_used_base_and_is_idempotent(image_server):
    provider, _dialer, hosts = make(image_server)
    other = provider.create(request("other"), dl())
    req = request()
    provider_id = provider.create(req, dl())
    host = hosts["h1"]
    created_calls = len(host.calls)
    provider.delete(provider_id, dl())
    assert set(host.domains) == {request("other").name}
    assert set(host.volumes()) == {
        BASE,
        BASE + ".sha256",
        *ids.instance_volumes(request("other").name, "kvm2"),
    }
    provider.delete(provider_id, dl())
    assert klass(lambda: provider.get(provider_id, dl())) == errors.NOT_FOUND
    order = [
        c
        for c in methods(host)[created_calls:]
        if c in ("domain_destroy", "domain_undefine", "volume_delete")
    ]
    assert order[:2] == ["domain_destroy", "domain_undefine"]
    deleted = [c[2][1] for c in host.calls if c[1] == "volume_delete"][-3:]
    assert deleted[-1] == ids.marks_volume(req.name, "kvm2")
    provider.delete(other, dl())  # the base's last user, but the catalogue names it: kept as a cache
    assert set(host.volumes()) == {BASE, BASE + ".sha256"}


def test_delete_finishes_any_partial_state(image_server):
    provider, _dialer, hosts = make(image_server)
    req = request()
    provider_id = provider.create(req, dl())
    host = hosts["h1"]
    host.domains[req.name]["state"] = b.DOMAIN_SHUTOFF  # destroy says "not running"
    host.fail["volume_delete"] = [err(b.ERR_RPC, "connection reset")]
    assert klass(lambda: provider.delete(provider_id, dl())) == errors.TRANSIENT
    assert req.name not in host.domains  # the domain went before the volume failed
    provider.delete(provider_id, dl())
    assert not any(v.startswith(req.name) for v in host.volumes())
    host.pools.clear()
    provider.delete(provider_id, dl())  # no pool: nothing can be left


def test_delete_refuses_a_domain_that_is_not_ours(image_server):
    provider, _dialer, hosts = make(image_server)
    hosts["h1"].add_domain("proxy-stranger")
    assert klass(lambda: provider.delete("hosts/h1/domains/proxy-stranger", dl())) == errors.PERMANENT
    assert "proxy-stranger" in hosts["h1"].domains


def test_cancelled_delete_keeps_the_instance(image_server):
    provider, _dialer, _hosts = make(image_server)
    provider_id = provider.create(request(), dl())
    assert klass(lambda: provider.delete(provider_id, cancelled())) == errors.TRANSIENT
    assert provider.get(provider_id, dl()).uid == "uid-1"


# -- list ------------------------------------------------------------------------------------


def test_list_every_host_only_ours(image_server):
    shared = [FakeHost("h1"), FakeHost("h2")]
    provider, _dialer, hosts = make(image_server, hosts=("h1", "h2"), fake_hosts=shared)
    other_type, _d, _h = make(image_server, type_name="kvm", hosts=("h1", "h2"), fake_hosts=shared)
    other_inst, _d, _h = make(image_server, hosts=("h1", "h2"), installation="inst-b", fake_hosts=shared)
    a = provider.create(request("a", zone="h1"), dl())
    b_id = provider.create(request("b", zone="h2"), dl())
    other_type.create(request("c", zone="h1"), dl())
    other_inst.create(request("d", zone="h2"), dl())
    hosts["h1"].add_domain("proxy-unmarked")
    listed = provider.list_by_tag(dl())
    assert sorted(i.id for i in listed) == sorted([a, b_id])
    assert {i.uid for i in listed} == {"a", "b"}


def test_list_fails_whole_when_a_host_fails(image_server):
    provider, dialer, hosts = make(image_server, hosts=("h1", "h2"))
    provider.create(request("a", zone="h1"), dl())
    hosts["h2"].fail["domain_names"] = err(b.ERR_RPC, "broken")
    with pytest.raises(ProviderError) as exc_info:
        provider.list_by_tag(dl())
    assert exc_info.value.op == "list" and errors.class_of(exc_info.value) == errors.TRANSIENT
    dialer.fail["h2"] = err(b.ERR_AUTH_FAILED, "authentication failed: host key", b.FROM_LIBSSH)
    provider.hosts.close()
    assert klass(lambda: provider.list_by_tag(dl())) == errors.PERMANENT


def test_list_skips_an_unreadable_domain_with_a_warning(image_server, caplog):
    provider, _dialer, hosts = make(image_server)
    a = provider.create(request("a"), dl())
    provider.create(request("b"), dl())
    name_b = request("b").name
    ns = metadata.namespace("kvm2")
    hosts["h1"].domains[name_b]["metadata"][ns] = "<instance"
    with caplog.at_level(logging.WARNING):
        listed = provider.list_by_tag(dl())
    assert [i.id for i in listed] == [a]
    assert name_b in caplog.text


def test_list_reports_volumes_left_without_a_domain_and_delete_collects_them(image_server):
    provider, _dialer, hosts = make(image_server)
    req = request()
    provider_id = provider.create(req, dl())
    host = hosts["h1"]
    del host.domains[req.name]  # undefined by hand, or a crash between volumes and define
    (left,) = provider.list_by_tag(dl())
    assert (left.id, left.state, left.uid, left.installation) == (
        provider_id,
        contract.TERMINATED,
        "uid-1",
        "inst-a",
    )
    assert left.created_at is not None
    assert klass(lambda: provider.get(provider_id, dl())) == errors.NOT_FOUND
    provider.delete(left.id, dl())
    assert not any(v.startswith(req.name) for v in host.volumes())
    assert provider.list_by_tag(dl()) == []


def test_cancelled_list_fails(image_server):
    provider, _dialer, _hosts = make(image_server)
    assert klass(lambda: provider.list_by_tag(cancelled())) == errors.TRANSIENT


# -- connections -----------------------------------------------------------------------------


def test_one_dial_per_host_for_many_operations(image_server):
    provider, dialer, _hosts = make(image_server)
    for n in range(5):
        provider_id = provider.create(request("u%d" % n), dl())
        provider.get(provider_id, dl())
    provider.list_by_tag(dl())
    assert dialer.dials == ["h1"]


def test_dead_connection_is_redialled(image_server):
    provider, dialer, _hosts = make(image_server)
    provider_id = provider.create(request(), dl())
    dialer.connections[-1].alive = False  # e.g. sshd restarted: the next operation redials
    assert provider.get(provider_id, dl()).uid == "uid-1"
    assert dialer.dials == ["h1", "h1"]


def test_overrunning_call_is_abandoned_transient_and_other_hosts_carry_on(image_server):
    provider, dialer, hosts = make(
        image_server, hosts=("h1", "h2"), budgets=Budgets(dial=2, call=0.5, transfer=1, http=5)
    )
    a = provider.create(request("a", zone="h1"), dl())
    b_id = provider.create(request("b", zone="h2"), dl())
    release = threading.Event()
    hosts["h1"].block["domain_state"] = release
    results = {}

    def slow_get():
        start = time.monotonic()
        try:
            provider.get(a, dl())
        except ProviderError as exc:
            results["a"] = (errors.class_of(exc), time.monotonic() - start)

    worker = threading.Thread(target=slow_get)
    worker.start()
    time.sleep(0.1)
    # while h1's call hangs, h2 works on its own connection
    assert provider.get(b_id, dl()).uid == "b"
    worker.join(5)
    assert results["a"][0] == errors.TRANSIENT and results["a"][1] < 3
    release.set()
    del hosts["h1"].block["domain_state"]
    assert provider.get(a, dl()).uid == "a"  # a fresh connection replaced the retired one
    assert dialer.dials.count("h1") == 2 and dialer.dials.count("h2") == 1


def test_abandoning_never_breaks_an_operation_already_on_that_connection(image_server):
    provider, _dialer, hosts = make(image_server, budgets=Budgets(dial=2, call=0.5, transfer=1, http=5))
    provider_id = provider.create(request(), dl())
    release = threading.Event()
    hosts["h1"].block["domain_addresses_agent"] = release
    outcome = {}

    def stuck():
        outcome["get"] = provider.get(provider_id, dl())  # its agent call is abandoned, skipped

    worker = threading.Thread(target=stuck)
    worker.start()
    worker.join(5)
    release.set()
    assert outcome["get"].uid == "uid-1"
    assert not any(c.closed for c in _dialer.connections)


def test_waiting_for_a_slow_dial_ends_with_the_deadline(image_server):
    provider, dialer, _hosts = make(image_server)
    dialer.block["h1"] = threading.Event()
    start = time.monotonic()
    assert klass(lambda: provider.list_by_tag(Deadline(0.5))) == errors.TRANSIENT
    assert time.monotonic() - start < 2
    dialer.block["h1"].set()


def test_credential_files_are_read_on_every_dial(tmp_path, image_server):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
        libvirt_backend,
    )

    key, known = tmp_path / "id", tmp_path / "known_hosts"
    with pytest.raises(credential_files.CredentialsUnavailable) as exc_info:
        libvirt_backend.check_credentials(str(key), str(known))
    assert "sshKeyFile" in str(exc_info.value)
    key.write_text("KEY MATERIAL NEVER SHOWN")
    with pytest.raises(credential_files.CredentialsUnavailable) as exc_info:
        libvirt_backend.check_credentials(str(key), str(known))
    assert "knownHostsFile" in str(exc_info.value) and "KEY MATERIAL" not in str(exc_info.value)
    known.write_text("")
    libvirt_backend.check_credentials(str(key), str(known))
    # through the provider: a missing key is Transient (a Secret may still be mounting)
    provider, _dialer, _hosts = make(image_server)
    real = libvirt_backend.LibvirtDialer(provider.config)
    provider.hosts._dialer = real
    assert klass(lambda: provider.list_by_tag(dl())) == errors.TRANSIENT


# -- check -----------------------------------------------------------------------------------


def test_check_every_host_on_fresh_connections_with_details(image_server):
    provider, dialer, hosts = make(image_server, hosts=("h1", "h2", "h3", "h4", "h5"))
    provider.create(request("a", zone="h1"), dl())
    pooled = dialer.connections[0]
    hosts["h2"].pools["default"]["state"] = b.POOL_INACTIVE
    hosts["h3"].pools.clear()
    dialer.fail["h4"] = err(b.ERR_AUTH_FAILED, "authentication failed: host key differs", b.FROM_LIBSSH)
    dialer.fail["h5"] = err(b.ERR_SYSTEM_ERROR, "Connection refused")
    statuses = provider.check(dl())
    assert [s.target for s in statuses] == ["h1", "h2", "h3", "h4", "h5"]
    assert [(s.ready, s.reason) for s in statuses] == [
        (True, "Reachable"),
        (False, "PoolNotActive"),
        (False, "PoolNotFound"),
        (False, "Unauthorized"),
        (False, "Unreachable"),
    ]
    details = statuses[0].details
    assert details["hostname"] == "hv-h1" and details["libvirtVersion"] == "9.0.0"
    assert details["poolState"] == "running" and details["poolAvailableGiB"] == 80.0
    assert details["memoryAvailableMiB"] == 16 * 1024 and details["user"] == "root"
    assert statuses[1].details["poolState"] == "inactive"
    assert statuses[3].details == {"user": "root", "pool": "default", "domainType": "kvm"}
    # fresh connections, closed afterwards; the pooled one is untouched and still used
    assert all(c.closed for c in dialer.connections[1:])
    assert not pooled.closed
    assert provider.hosts.dials == 1


def test_check_credentials_unavailable(tmp_path, image_server):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
        libvirt_backend,
    )

    provider, _dialer, _hosts = make(image_server)
    provider.hosts._dialer = libvirt_backend.LibvirtDialer(provider.config)
    (status,) = provider.check(dl())
    assert (status.ready, status.reason) == (False, "CredentialsUnavailable")


def test_check_returns_promptly_when_expired(image_server):
    provider, dialer, _hosts = make(image_server, hosts=("h1", "h2"))
    dialer.block["h1"] = threading.Event()
    start = time.monotonic()
    statuses = provider.check(Deadline(0.3))
    assert time.monotonic() - start < 2
    assert [s.target for s in statuses] == ["h1", "h2"]
    assert (statuses[0].ready, statuses[0].reason) == (False, "Timeout")  # h2 is not held up by h1
    dialer.block["h1"].set()


# -- logging ---------------------------------------------------------------------------------


def test_cloud_init_and_image_bodies_never_logged(image_server, caplog):
    sentinel = "SENTINEL-never-logged"
    provider, _dialer, _hosts = make(image_server)
    caplog.set_level(logging.DEBUG, logger="crawl.egress_proxies.providers.libvirt")
    req = request(cloud_init="#cloud-config\nsecret: %s\n" % sentinel)
    provider_id = provider.create(req, dl())
    provider.get(provider_id, dl())
    provider.list_by_tag(dl())
    provider.delete(provider_id, dl())
    assert "libvirt call host=h1 method=domain_define" in caplog.text  # the call lines are there
    assert "cloud_init_bytes" in caplog.text
    assert sentinel not in caplog.text
    assert repr(IMAGE[:32])[2:-1] not in caplog.text


def test_concurrent_creates_share_one_download_and_one_dial(image_server):
    provider, dialer, hosts = make(image_server)
    errors_seen = []

    def create(n):
        try:
            provider.create(request("c%d" % n), dl())
        except Exception as exc:
            errors_seen.append(exc)

    workers = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    assert errors_seen == []
    assert image_server.requests["/tiny.qcow2"] == 1
    assert len(hosts["h1"].domains) == 8
    assert dialer.dials == ["h1"]


def test_id_for_follows_the_placement_rules_of_create(image_server):
    one, _d, _h = make(image_server)
    two, _d2, _h2 = make(image_server, hosts=("h1", "h2"))
    zoneless = contract.Placement()
    assert one.id_for("proxy-a", zoneless) == "hosts/h1/domains/proxy-a"
    assert one.id_for("proxy-a", contract.Placement(zone="h1"), "ns") == "hosts/h1/domains/proxy-a"
    assert two.id_for("proxy-a", zoneless) is None
    assert two.id_for("proxy-a", contract.Placement(zone="h2")) == "hosts/h2/domains/proxy-a"
    assert two.id_for("proxy-a", contract.Placement(zone="nope")) is None
    assert one.id_for("Not_A_Label", zoneless) is None


def test_an_image_download_that_trickles_is_bounded_by_the_deadline(image_server):
    """Issue 15: one read of the image body blocked as long as bytes kept trickling in (each
    socket read within its timeout), holding create past any deadline. Each read is bounded."""
    slow = TrickleServer(interval=0.1, total=5000)
    try:
        images = {"tiny": {"url": slow.endpoint + "/tiny.qcow2", "sha256": "0" * 64}}
        provider, _dialer, hosts = make(image_server, images=images)
        started = time.monotonic()
        assert klass(lambda: provider.create(request(), Deadline(2))) == errors.TRANSIENT
        assert time.monotonic() - started < 8, "the trickling download held create"
        assert not [v for v in hosts["h1"].volumes() if v.startswith("egress-base-")], "nothing half-cached"
    finally:
        slow.close()


# -- auth ------------------------------------------------------------------------------------


def test_auth_is_fixed_at_creation_and_a_stopped_domain_never_starts_with_other_credentials(
    image_server, caplog
):
    """The marks keep the seed's password file line: the same credentials are unchanged, others
    (and none at creation) are Permanent CredentialsFixedAtCreation, and a stopped domain asked
    for other credentials stays stopped; the domain XML's debug log has the line redacted."""
    provider, _dialer, hosts = make(image_server)
    auth = proxy_auth.Auth("crawler", "Sentinel-pw")
    req = dataclasses.replace(request(), auth=auth)
    provider_id = provider.create(req, dl())
    line = metadata.parse_element(
        hosts["h1"].domains[req.name]["metadata"][metadata.namespace("kvm2")]
    ).passwd
    assert line.startswith("crawler:$6$") and auth.matches(line)
    assert provider.sync_auth(provider_id, auth, dl()) is False
    for other in (proxy_auth.Auth("crawler", "other"), None):
        with pytest.raises(ProviderError) as caught:
            provider.sync_auth(provider_id, other, dl(), apply=False)
        assert caught.value.error_class == errors.PERMANENT
        assert caught.value.reason == errors.REASON_CREDENTIALS_FIXED
        assert "other credentials" in str(caught.value) and "replace the instance" in str(caught.value)
    hosts["h1"].domains[req.name]["state"] = b.DOMAIN_SHUTOFF
    with pytest.raises(ProviderError) as caught:
        provider.create(dataclasses.replace(req, auth=proxy_auth.Auth("crawler", "other")), dl())
    assert caught.value.reason == errors.REASON_CREDENTIALS_FIXED
    assert hosts["h1"].domains[req.name]["state"] == b.DOMAIN_SHUTOFF
    bare = request(uid="uid-2")
    bare_id = provider.create(bare, dl())
    with pytest.raises(ProviderError, match="no authentication") as caught:
        provider.sync_auth(bare_id, auth, dl())
    assert caught.value.reason == errors.REASON_CREDENTIALS_FIXED


def test_auth_needs_a_cloud_init_of_an_accepted_kind_before_any_dial(image_server):
    provider, dialer, _hosts = make(image_server)
    auth = proxy_auth.Auth("crawler", "Sentinel-pw")
    for cloud_init, fragment in (("", "cloud_init: required with auth"), ("plain", "cloud_init: with auth")):
        req = dataclasses.replace(request(cloud_init=cloud_init), auth=auth)
        assert fragment in provider.check_request(req)
        with pytest.raises(ProviderError, match=fragment):
            provider.create(req, dl())
    assert dialer.dials == []
