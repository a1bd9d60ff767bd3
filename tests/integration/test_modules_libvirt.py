"""The four modules through real ``ansible-playbook`` runs against the real libvirtd, reached
over the real sshd (the hypervisor of ``contract/libvirt_host.py``).

Also measures what the issue asks for: the lifecycle wall time, and how many SSH dials one
batched ``proxy_instance`` run of 20 instances on one host makes (counted as accepted logins in
the sshd log, so the count is the hypervisor's, not the provider's own claim). The figures are
printed, never asserted against a time.
"""

from __future__ import annotations

import io
import time
import uuid

import pycdlib
import pytest
from contract import libvirt_fixtures
from contract.libvirt_backend import HOST_NAME, PROVIDER_NAME, LibvirtContractBackend

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import cloud_init_auth, proxy_auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import ids

from .playbook import run_playbook

# The harness's own provider name: each kvm2 provider lists (and so collects and deletes) only the
# domains it made, and the harness's teardown must see what the modules made.
PROVIDER = PROVIDER_NAME

pytestmark = [pytest.mark.libvirt, pytest.mark.playbook]

# The shared hypervisor fixtures (one host per test process).
libvirt_host = libvirt_fixtures.libvirt_host
image_host = libvirt_fixtures.image_host

PI = "crawl.egress_proxies.proxy_instance"
INFO = "crawl.egress_proxies.proxy_info"
GC = "crawl.egress_proxies.proxy_gc"
CHECK = "crawl.egress_proxies.proxy_check"
PLACEMENT = {"zone": HOST_NAME, "machine_type": "tiny", "image": "base"}


@pytest.fixture
def hv(libvirt_host, image_host):
    """Module defaults for a kvm2 provider ``hv`` on the test hypervisor; a harness behind it
    deletes whatever its installation left at teardown."""
    harness = LibvirtContractBackend(libvirt_host, image_host)
    defaults = {
        "providers": [{"name": PROVIDER, "type": "kvm2", "kvm2": harness.block()}],
        "installation": harness.installation,
    }
    try:
        yield harness, defaults
    finally:
        harness.teardown()


def ours(host, name: str) -> list:
    return [v for v in host.volumes() if v.startswith(name + ".")]


def test_lifecycle_through_the_modules(tmp_path, hv):
    harness, defaults = hv
    uid = str(uuid.uuid4())
    started = time.monotonic()
    run = run_playbook(
        tmp_path,
        [
            {"name": "create", PI: {"provider": PROVIDER, "uid": uid, "placement": PLACEMENT}},
            {"name": "again", PI: {"provider": PROVIDER, "uid": uid, "placement": PLACEMENT}},
            {"name": "info", INFO: {"provider": PROVIDER}},
            {"name": "check", CHECK: {"provider": PROVIDER}},
        ],
        module_defaults=defaults,
    )
    assert run.rc == 0, run.stdout[-3000:]
    created = run["create"]["instance"]
    for task in ("create", "again", "info", "check"):
        print(task, [(r["op"], r["duration_seconds"]) for r in run[task].get("telemetry", [])])
    assert run["create"]["changed"] is True and run["again"]["changed"] is False
    assert created["id"].startswith("hosts/hv1/domains/proxy-") and created["uid"] == uid
    assert created["state"] == "Provisioning"  # the test image boots nothing: no address
    assert run["again"]["instance"]["id"] == created["id"]
    assert [i["id"] for i in run["info"]["instances"]] == [created["id"]]
    (provider,) = run["check"]["providers"]
    (target,) = provider["targets"]
    assert (target["target"], target["ready"], target["reason"]) == ("hv1", True, "Reachable")
    assert target["details"]["pool"] == harness.host.pool
    assert harness.host.direct().lookupByName(created["name"]).isActive() == 1
    run = run_playbook(
        tmp_path,
        [
            {"name": "delete", PI: {"provider": PROVIDER, "id": created["id"], "state": "absent"}},
            {"name": "delete again", PI: {"provider": PROVIDER, "id": created["id"], "state": "absent"}},
            {"name": "info", INFO: {"provider": PROVIDER, "ids": [created["id"]]}},
        ],
        module_defaults=defaults,
    )
    elapsed = time.monotonic() - started
    assert run.rc == 0, run.stdout[-3000:]
    assert run["delete"]["changed"] is True and run["delete again"]["changed"] is False
    assert run["info"]["not_found"] == [created["id"]]
    assert ours(harness.host, created["name"]) == []
    print("module lifecycle (2 playbook runs, 7 tasks) wall time: %.2fs" % elapsed)


def test_batch_of_twenty_on_one_host_dials_once(tmp_path, hv):
    harness, defaults = hv
    uids = ["batch-%02d-%s" % (i, uuid.uuid4().hex[:6]) for i in range(20)]
    logins = harness.host.ssh_logins()
    started = time.monotonic()
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "create",
                PI: {"provider": PROVIDER, "placement": PLACEMENT, "instances": [{"uid": u} for u in uids]},
            }
        ],
        module_defaults=defaults,
    )
    create_seconds = time.monotonic() - started
    # The distinct item errors, not the output's tail: 20 items' echoed arguments fill 3000
    # characters and hid why the batch failed the two times it did.
    errors = sorted(
        {(r.get("error_class") or "", (r.get("msg") or "")[:400]) for r in run["create"].get("results") or []}
    )  # error_class is None on the items that did not fail: "" sorts beside the classes
    assert run.rc == 0, errors or run.stdout[-3000:]
    create_dials = harness.host.ssh_logins() - logins
    results = run["create"]["results"]
    print(sorted((r["op"], round(r["duration_seconds"], 2)) for r in run["create"]["telemetry"]))
    assert [r["uid"] for r in results] == uids
    assert all(not r["failed"] and r["state"] == "Provisioning" for r in results), results
    running = [d.name() for d in harness.host.direct().listAllDomains(0) if d.isActive()]
    assert {r["name"] for r in results} <= set(running)
    logins = harness.host.ssh_logins()
    started = time.monotonic()
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "delete",
                PI: {
                    "provider": PROVIDER,
                    "state": "absent",
                    "instances": [{"uid": u, "placement": PLACEMENT} for u in uids],
                },
            }
        ],
        module_defaults=defaults,
    )
    delete_seconds = time.monotonic() - started
    assert run.rc == 0, run.stdout[-3000:]
    delete_dials = harness.host.ssh_logins() - logins
    assert all(r["state"] == "absent" for r in run["delete"]["results"])
    # this batch's volumes are gone (the session's host holds other tests' volumes too)
    names = {r["name"] for r in results}
    assert not [v for v in harness.host.volumes() if any(v.startswith(n) for n in names)]
    # one pooled connection per host per module run, whatever the batch size
    assert (create_dials, delete_dials) == (1, 1)
    print(
        "batch of 20 on one host: create %.2fs with %d SSH dial(s), delete %.2fs with %d SSH dial(s)"
        % (create_seconds, create_dials, delete_seconds, delete_dials)
    )


def test_gc_collects_orphans_and_volumes_left_without_a_domain(tmp_path, hv):
    harness, defaults = hv
    live, orphan, stray = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "create",
                PI: {
                    "provider": PROVIDER,
                    "placement": PLACEMENT,
                    "instances": [{"uid": u} for u in (live, orphan, stray)],
                },
            }
        ],
        module_defaults=defaults,
    )
    assert run.rc == 0, run.stdout[-3000:]
    by_uid = {r["uid"]: r for r in run["create"]["results"]}
    dom = harness.host.direct().lookupByName(by_uid[stray]["name"])  # volumes stay, domain goes
    dom.destroy()
    dom.undefine()
    run = run_playbook(
        tmp_path,
        [
            {"name": "sweep", GC: {"live_uids": [live], "min_age": "0"}},
            {"name": "info", INFO: {"provider": PROVIDER}},
        ],
        module_defaults=defaults,
    )
    assert run.rc == 0, run.stdout[-3000:]
    assert sorted(d["uid"] for d in run["sweep"]["deleted"]) == sorted([orphan, stray])
    assert [i["uid"] for i in run["info"]["instances"]] == [live]
    assert (
        ours(harness.host, by_uid[stray]["name"]) == [] and ours(harness.host, by_uid[orphan]["name"]) == []
    )


def test_bad_config_names_the_field_and_dials_nothing(tmp_path, hv):
    harness, defaults = hv
    block = dict(harness.block(), hosts=[{"name": "hv/1", "address": "127.0.0.1"}])
    logins = harness.host.ssh_logins()
    volumes = set(harness.host.volumes())  # the session's host holds other tests' volumes
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "bad",
                PI: {
                    "providers": [{"name": PROVIDER, "type": "kvm2", "kvm2": block}],
                    "provider": PROVIDER,
                    "uid": "u",
                },
            }
        ],
    )
    assert run.rc != 0
    assert "providers[0].kvm2.hosts[0].name" in run["bad"]["msg"]
    assert harness.host.ssh_logins() == logins
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "bad placement",
                PI: {"provider": PROVIDER, "uid": "u", "placement": dict(PLACEMENT, machine_type="huge")},
            }
        ],
        module_defaults=defaults,
    )
    assert run.rc != 0 and run["bad placement"]["error_class"] == "permanent"
    assert "placement.machine_type" in run["bad placement"]["msg"]
    assert set(harness.host.volumes()) == volumes  # nothing made


def test_cloud_init_and_key_never_printed(tmp_path, hv):
    harness, defaults = hv
    sentinel = "SENTINEL-%s" % uuid.uuid4().hex
    with open(harness.host.key, encoding="utf-8") as handle:
        key_line = handle.read().splitlines()[1]
    uid = str(uuid.uuid4())
    tasks = [
        {
            "name": "create",
            PI: {
                "provider": PROVIDER,
                "uid": uid,
                "placement": PLACEMENT,
                "cloud_init": "#cloud-config\n# %s\n" % sentinel,
            },
        },
        {"name": "delete", PI: {"provider": PROVIDER, "uid": uid, "placement": PLACEMENT, "state": "absent"}},
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=defaults, verbosity=4, json_output=False)
    assert run.rc == 0, run.stdout[-3000:]
    assert "libvirt call host=hv1 method=domain_define" in run.stdout  # -vvvv shows the call lines
    for text in (run.stdout, run.stderr, harness.host.read_log()):
        assert sentinel not in text
        assert key_line not in text


def test_check_tells_whether_kvm_guests_can_run(tmp_path, hv):
    """A host configured ``domainType: kvm``: where a KVM guest cannot start (the test
    hypervisor's probe found so, or the create fails), the create's error says what to set
    and ``proxy_check`` says why instead of Reachable; where one can, both succeed. Proved on
    whatever machine runs it: the probe and the create must agree."""
    harness, defaults = hv
    block = dict(harness.block())
    block["hosts"] = [dict(block["hosts"][0], domainType="kvm")]
    defaults = dict(defaults, providers=[{"name": PROVIDER, "type": "kvm2", "kvm2": block}])
    uid = str(uuid.uuid4())
    run = run_playbook(
        tmp_path,
        [
            {
                "name": "create",
                PI: {"provider": PROVIDER, "uid": uid, "placement": PLACEMENT},
                "ignore_errors": True,
            },
            {"name": "check", CHECK: {"provider": PROVIDER}},
        ],
        module_defaults=defaults,
    )
    (target,) = run["check"]["providers"][0]["targets"]
    created = not run["create"].get("failed")
    choice = harness.host.choice
    if choice.reason.startswith("KVM present but a guest did not start"):
        assert not created, "the probe saw KVM guests fail, the provider's create must fail too"
    elif choice.domain_type == "kvm" and "forced" not in choice.reason:
        assert created, run["create"].get("msg")
    if created:
        assert (target["ready"], target["reason"]) == (True, "Reachable"), target
        assert "failingGuests" not in target["details"]
    else:
        assert run["create"]["error_class"] == "transient", run["create"]
        assert "domainType: qemu" in run["create"]["msg"], run["create"]["msg"]
        assert target["ready"] is False and target["reason"] in ("GuestsFailing", "DomainTypeUnsupported")
        assert "domainType: qemu" in target["message"], target
        if target["reason"] == "GuestsFailing":
            assert target["details"]["failingGuests"] == [names.name_from_uid(uid)]


def _volume_bytes(host, volume: str) -> bytes:
    """A volume's content downloaded through libvirt (behind the provider's back)."""
    conn = host.direct()
    vol = conn.storagePoolLookupByName(host.pool).storageVolLookupByName(volume)
    stream = conn.newStream(0)
    vol.download(stream, 0, 0, 0)
    chunks = []
    stream.recvAll(lambda _stream, data, out: out.append(data), chunks)
    stream.finish()
    return b"".join(chunks)


def _iso_file(image: bytes, name: str) -> str:
    iso = pycdlib.PyCdlib()
    iso.open_fp(io.BytesIO(image))
    try:
        out = io.BytesIO()
        iso.get_file_from_iso_fp(out, joliet_path="/" + name)
        return out.getvalue().decode("utf-8")
    finally:
        iso.close()


def test_auth_is_in_the_seed_and_fixed_at_creation(tmp_path, hv):
    """auth on kvm2: the seed's user-data is the user's cloud-init plus the collection's part
    with the hash only; the same credentials again are unchanged, others (check mode too) and a
    domain made without auth are Permanent saying to replace it (CredentialsFixedAtCreation); a
    missing or unusable cloud_init is refused before anything is touched. The password is nowhere:
    not in the seed, the domain XML, the output or the hypervisor's log."""
    harness, defaults = hv
    password, other = "Sentinel-%s" % uuid.uuid4().hex, "Other-%s" % uuid.uuid4().hex
    mine = "#cloud-config\n# user-mark-%s\n" % uuid.uuid4().hex
    auth = {"username": "crawler", "password": password}
    uid, bare, refused = str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4())
    base = {"provider": PROVIDER, "placement": PLACEMENT}
    tasks = [
        {"name": "no cloud_init", PI: dict(base, uid=refused, auth=auth), "ignore_errors": True},
        {
            "name": "plain text",
            PI: dict(base, uid=refused, auth=auth, cloud_init="just text"),
            "ignore_errors": True,
        },
        {"name": "create", PI: dict(base, uid=uid, auth=auth, cloud_init=mine)},
        {"name": "same", PI: dict(base, uid=uid, auth=auth, cloud_init=mine)},
        {
            "name": "other, check mode",
            PI: dict(base, uid=uid, auth=dict(auth, password=other), cloud_init=mine),
            "check_mode": True,
            "ignore_errors": True,
        },
        {
            "name": "other",
            PI: dict(base, uid=uid, auth=dict(auth, password=other), cloud_init=mine),
            "ignore_errors": True,
        },
        {"name": "bare", PI: dict(base, uid=bare, cloud_init=mine)},
        {
            "name": "bare with auth",
            PI: dict(base, uid=bare, auth=auth, cloud_init=mine),
            "ignore_errors": True,
        },
    ]
    started = time.monotonic()
    run = run_playbook(tmp_path, tasks, module_defaults=defaults)
    assert "create" in run.tasks, run.stdout[-3000:]
    assert run["no cloud_init"]["failed"] and "cloud_init: required with auth" in run["no cloud_init"]["msg"]
    assert run["plain text"]["failed"] and "cloud_init: with auth it must be" in run["plain text"]["msg"]
    assert ours(harness.host, names.name_from_uid(refused)) == []  # refused before anything
    assert run["create"]["changed"] is True and not run["create"].get("failed")
    assert run["same"]["changed"] is False and not run["same"].get("failed")
    for task, what in (("other, check mode", "other credentials"), ("other", "other credentials")):
        assert run[task]["failed"], run[task]
        assert run[task]["error_class"] == "permanent" and what in run[task]["msg"], run[task]
        assert "replace the instance" in run[task]["msg"]
        assert run[task]["instance"]["reason"] == "CredentialsFixedAtCreation", run[task]
    assert run["bare with auth"]["failed"] and "no authentication" in run["bare with auth"]["msg"]

    name = run["create"]["instance"]["name"]
    image = _volume_bytes(harness.host, ids.seed_volume(name, "kvm2"))
    user_data = _iso_file(image, "user-data")
    assert user_data.count(mine) == 1  # the user's cloud-init, unchanged, as one part
    line = cloud_init_auth.passwd_of(user_data)
    assert line.startswith("crawler:$6$")
    assert proxy_auth.Auth("crawler", password).matches(line)
    assert not proxy_auth.Auth("crawler", other).matches(line)
    xml = harness.host.direct().lookupByName(name).XMLDesc(0)
    assert 'passwd="%s"' % line.strip() in xml  # the marks keep the same line
    bare_seed = _iso_file(
        _volume_bytes(harness.host, ids.seed_volume(run["bare"]["instance"]["name"], "kvm2")), "user-data"
    )
    assert bare_seed == mine  # no auth asked: the user's cloud-init alone
    for text in (image.decode("latin-1"), xml, run.stdout, run.stderr, harness.host.read_log()):
        assert password not in text and other not in text
    print("kvm2 auth: 8 tasks in %.2fs" % (time.monotonic() - started))
