"""The libvirt provider's pure parts: config, ids, marks, XML, seed ISO, state and address
tables, and the one ``classify`` with its table."""

from __future__ import annotations

import datetime
import io
import urllib.error
import xml.etree.ElementTree as ET

import pycdlib
import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import DeadlineExceeded
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
    CredentialsUnavailable,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend as b,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    ids,
    inspect,
    metadata,
    seed,
    xmlbuild,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.classify import (
    Permanent,
    Quota,
    Transient,
    classify,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.guard import (
    CallAbandoned,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.libvirt_backend import (
    LibraryMissing,
    uri_for,
)

GOOD = {
    "sshKeyFile": "/etc/keys/id",
    "knownHostsFile": "/etc/keys/known_hosts",
    "images": {"debian-12": {"url": "https://images.example/d.qcow2", "sha256": "a" * 64}},
    "machineTypes": {"small": {"vcpus": 1, "memoryMiB": 512}},
    "hosts": [{"name": "beelink", "address": "192.0.2.10"}],
}


def parse_block(type_name="kvm", **changes):
    data = dict(GOOD, **changes)
    return (
        config.parse({"providers": [{"name": "hv", "type": type_name, type_name: data}]}).providers[0].block
    )


def problems(type_name="kvm", **changes) -> str:
    with pytest.raises(ConfigError) as exc_info:
        parse_block(type_name, **changes)
    return "; ".join(exc_info.value.problems)


# -- config ----------------------------------------------------------------------------------


def test_config_defaults_for_both_types():
    for type_name in ("kvm", "kvm2"):
        parsed = parse_block(type_name)
        assert parsed.disk_size_gb == 10
        host = parsed.hosts[0]
        assert (host.user, host.pool, host.socket, host.bridge, host.domain_type) == (
            "root",
            "default",
            "",
            "",
            "kvm",
        )
        image = parsed.images["debian-12"]
        assert (image.format, image.firmware) == ("qcow2", "bios")
        assert parsed.machine_types["small"].memory_mib == 512


@pytest.mark.parametrize(
    "changes, path",
    [
        ({"hosts": [{"name": "a/b", "address": "h"}]}, "providers[0].kvm.hosts[0].name"),
        ({"hosts": [{"name": "Beelink", "address": "h"}]}, "providers[0].kvm.hosts[0].name"),
        ({"hosts": [{"name": "a" * 33, "address": "h"}]}, "providers[0].kvm.hosts[0].name"),
        ({"hosts": [{"name": "a", "address": "h/x"}]}, "providers[0].kvm.hosts[0].address"),
        (
            {"hosts": [{"name": "a", "address": "h", "socket": "rel/sock"}]},
            "providers[0].kvm.hosts[0].socket",
        ),
        ({"hosts": [{"name": "a", "address": "h", "socket": "/s?x=1"}]}, "providers[0].kvm.hosts[0].socket"),
        (
            {"hosts": [{"name": "a", "address": "h", "domainType": "xen"}]},
            "providers[0].kvm.hosts[0].domainType",
        ),
        ({"hosts": [{"name": "a", "address": "h", "color": "red"}]}, "providers[0].kvm.hosts[0].color"),
        ({"hosts": [{"name": "a", "address": "h"}, {"name": "a", "address": "i"}]}, "providers[0].kvm.hosts"),
        ({"hosts": []}, "providers[0].kvm.hosts"),
        ({"images": {"deb.12": {"url": "https://x/y", "sha256": "a" * 64}}}, "providers[0].kvm.images"),
        ({"images": {"d": {"url": "ftp://x/y", "sha256": "a" * 64}}}, "providers[0].kvm.images.d.url"),
        ({"images": {"d": {"url": "https://x/y", "sha256": "A" * 64}}}, "providers[0].kvm.images.d.sha256"),
        ({"images": {"d": {"url": "https://x/y", "sha256": "a" * 64, "format": "vmdk"}}}, "images.d.format"),
        ({"machineTypes": {"small": {"vcpus": 0, "memoryMiB": 512}}}, "machineTypes.small.vcpus"),
        ({"machineTypes": {"small": {"vcpus": 1, "memoryMib": 512}}}, "machineTypes.small.memoryMib"),
        ({"sshKeyFile": "relative/key"}, "providers[0].kvm.sshKeyFile"),
        ({"diskSizeGb": 0}, "providers[0].kvm.diskSizeGb"),
        ({"diskSizeGb": "10"}, "providers[0].kvm.diskSizeGb"),
        ({"knownHostsFile": ""}, "knownHostsFile"),
        ({"insecureIgnoreHostKey": True}, "insecureIgnoreHostKey"),
    ],
)
def test_config_rejects_bad_input_naming_the_field(changes, path):
    assert path in problems(**changes)


def test_config_insecure_instead_of_known_hosts_is_accepted():
    parsed = parse_block(knownHostsFile="", insecureIgnoreHostKey=True)
    assert parsed.insecure_ignore_host_key


def test_uri_names_files_and_never_their_contents():
    parsed = parse_block(
        hosts=[{"name": "a", "address": "127.0.0.1:2222", "user": "ops", "socket": "/run/l.sock"}]
    )
    uri = uri_for(parsed.hosts[0], "/k/id", "/k/known", False)
    assert uri.startswith("qemu+libssh2://ops@127.0.0.1:2222/system?")
    assert "keyfile=/k/id" in uri and "known_hosts=/k/known" in uri and "socket=/run/l.sock" in uri
    assert "known_hosts_verify=normal" in uri
    insecure = uri_for(parsed.hosts[0], "/k/id", "", True)
    assert "known_hosts_verify=ignore" in insecure and "known_hosts=" not in insecure


# -- ids and names ---------------------------------------------------------------------------


def test_id_round_trip_and_strict_parse():
    assert ids.parse_id(ids.format_id("h1", "proxy-abc")) == ("h1", "proxy-abc")
    for bad in [
        "",
        None,
        "hosts/h1/domains",
        "hosts/h1/domains/proxy-a/x",
        "host/h1/domains/proxy-a",
        "hosts/H1/domains/proxy-a",
        "hosts/h1/domain/proxy-a",
        "hosts//domains/proxy-a",
        "hosts/h1/domains/Proxy",
        "hosts/h1/domains/proxy-a\n",
        "hosts/h.1/domains/proxy-a",
    ]:
        with pytest.raises(ValueError):
            ids.parse_id(bad)


def test_volume_names_carry_the_type():
    assert ids.overlay_volume("proxy-a", "kvm") != ids.overlay_volume("proxy-a", "kvm2")
    assert ids.name_of_marks_volume(ids.marks_volume("proxy-a", "kvm2"), "kvm2") == "proxy-a"
    assert ids.name_of_marks_volume(ids.marks_volume("proxy-a", "kvm2"), "kvm") is None
    assert ids.name_of_marks_volume("egress-image-x.sha256", "kvm") is None
    assert ids.instance_volumes("proxy-a", "kvm")[-1] == ids.marks_volume("proxy-a", "kvm")


# -- marks -----------------------------------------------------------------------------------


def test_marks_round_trip_element_and_volume():
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    marks = metadata.parse_element(metadata.element_xml("u-1", when, "inst"))
    assert marks == metadata.Marks(True, "u-1", when, "inst")
    data = metadata.volume_json("kvm", "proxy-a", "u-1", when, "inst")
    assert metadata.parse_volume_json(data + b"\0\0", "kvm", "proxy-a") == marks
    with pytest.raises(metadata.MarksError):
        metadata.parse_volume_json(data, "kvm2", "proxy-a")
    with pytest.raises(metadata.MarksError):
        metadata.parse_element("<instance")


def test_unparsable_created_at_is_none():
    assert (
        metadata.parse_element('<instance managed="true" uid="u" createdAt="yesterday"/>').created_at is None
    )
    assert metadata.namespace("kvm") != metadata.namespace("kvm2")


def test_domain_xml_carries_marks_in_the_types_namespace():
    when = datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC)
    xml = xmlbuild.domain_xml(
        type_name="kvm2",
        name="proxy-a",
        domain_type="qemu",
        vcpus=2,
        memory_mib=512,
        firmware="uefi",
        overlay_path="/p/o'\"<x>.qcow2",
        seed_path="/p/s.iso",
        bridge="br0",
        uid="u-1",
        created_at=when,
        installation="inst",
    )
    assert (
        'type="qemu"' in xml
        and metadata.namespace("kvm2") in xml
        and metadata.namespace("kvm") + '"' not in xml
    )
    assert 'firmware="efi"' in xml and 'bridge="br0"' in xml and "org.qemu.guest_agent.0" in xml
    assert "&lt;x&gt;" in xml  # values never break out of their attribute
    assert "host-passthrough" not in xml  # TCG has no host CPU to pass through
    devices = ET.fromstring(xml).find("devices")
    (cdrom,) = [d for d in devices.findall("disk") if d.get("device") == "cdrom"]
    # the seed on virtio-scsi: cloud kernels (Debian's linux-image-cloud-amd64) have no AHCI
    assert cdrom.find("target").get("bus") == "scsi" and cdrom.find("source").get("file") == "/p/s.iso"
    scsi = [c.get("model") for c in devices.findall("controller") if c.get("type") == "scsi"]
    assert scsi == ["virtio-scsi"]


def test_seed_iso_is_nocloud_with_all_three_files():
    data = seed.build("proxy-a", "#cloud-config\nSECRET\n", seed.vendor_data("", True))
    iso = pycdlib.PyCdlib()
    iso.open_fp(io.BytesIO(data))
    try:
        assert iso.pvd.volume_identifier.decode().strip() == "cidata"
        files = {}
        for name in ("user-data", "meta-data", "vendor-data"):
            out = io.BytesIO()
            iso.get_file_from_iso_fp(out, rr_path="/" + name)
            files[name] = out.getvalue().decode()
    finally:
        iso.close()
    assert files["user-data"] == "#cloud-config\nSECRET\n"
    assert "instance-id: proxy-a" in files["meta-data"]
    assert "qemu-guest-agent" in files["vendor-data"]
    assert seed.vendor_data("#cloud-config\nx: 1\n", True) == "#cloud-config\nx: 1\n"
    assert seed.vendor_data("", False) == ""


# -- state and address tables ----------------------------------------------------------------


@pytest.mark.parametrize(
    "state, ip, want",
    [
        (b.DOMAIN_NOSTATE, "", contract.PROVISIONING),
        (b.DOMAIN_NOSTATE, "10.0.0.5", contract.PROVISIONING),
        (b.DOMAIN_RUNNING, "", contract.PROVISIONING),
        (b.DOMAIN_RUNNING, "10.0.0.5", contract.RUNNING),
        (b.DOMAIN_BLOCKED, "", contract.PROVISIONING),
        (b.DOMAIN_BLOCKED, "10.0.0.5", contract.RUNNING),
        (b.DOMAIN_PAUSED, "10.0.0.5", contract.STOPPED),
        (b.DOMAIN_SHUTDOWN, "", contract.STOPPED),
        (b.DOMAIN_SHUTOFF, "", contract.STOPPED),
        (b.DOMAIN_CRASHED, "", contract.STOPPED),
        (b.DOMAIN_PMSUSPENDED, "10.0.0.5", contract.STOPPED),
        (42, "10.0.0.5", contract.STOPPED),
    ],
)
def test_state_table(state, ip, want):
    assert inspect.map_state(state, ip) == want


def test_first_ipv4_drops_unroutable_and_mislabelled():
    assert (
        inspect.first_ipv4(
            [
                ("ipv4", "127.0.0.1"),
                ("ipv4", "169.254.1.1"),
                ("ipv4", "0.0.0.0"),
                ("ipv6", "fe80::1"),
                ("ipv4", "fe80::2"),
                ("ipv4", "not-an-ip"),
                ("ipv4", "224.0.0.1"),
                ("ipv4", "10.1.2.3"),
                ("ipv4", "10.9.9.9"),
            ]
        )
        == "10.1.2.3"
    )
    assert inspect.first_ipv4([("ipv6", "2001:db8::1")]) == ""


# -- classify --------------------------------------------------------------------------------


def lv(code, text="x", domain=0):
    return b.LibvirtCallError(code, text, domain)


@pytest.mark.parametrize(
    "op, exc, want",
    [
        ("get", lv(b.ERR_NO_DOMAIN), errors.NOT_FOUND),
        ("create", lv(b.ERR_NO_DOMAIN), errors.TRANSIENT),
        ("delete", lv(b.ERR_NO_DOMAIN), errors.TRANSIENT),
        ("list", lv(b.ERR_NO_DOMAIN), errors.TRANSIENT),
        ("get", lv(b.ERR_NO_STORAGE_VOL), errors.TRANSIENT),
        ("create", lv(b.ERR_NO_STORAGE_VOL), errors.TRANSIENT),
        ("create", lv(b.ERR_NO_STORAGE_POOL), errors.PERMANENT),
        ("create", lv(b.ERR_XML_ERROR), errors.PERMANENT),
        ("create", lv(b.ERR_XML_DETAIL), errors.PERMANENT),
        ("create", lv(b.ERR_NO_SUPPORT), errors.PERMANENT),
        ("create", lv(b.ERR_INVALID_ARG), errors.PERMANENT),
        ("create", lv(b.ERR_ACCESS_DENIED), errors.PERMANENT),
        ("create", lv(b.ERR_CONFIG_UNSUPPORTED), errors.PERMANENT),
        ("create", lv(b.ERR_OPERATION_UNSUPPORTED), errors.PERMANENT),
        # libssh, as seen against a real sshd: wrong host key, unknown host key, refused key
        (
            "get",
            lv(
                b.ERR_AUTH_FAILED,
                "authentication failed: !!! SSH HOST KEY VERIFICATION FAILED !!!",
                b.FROM_LIBSSH,
            ),
            errors.PERMANENT,
        ),
        (
            "get",
            lv(
                b.ERR_LIBSSH,
                "libssh transport error: No user interaction callback provided: Can't verify",
                66,
            ),
            errors.PERMANENT,
        ),
        (
            "list",
            lv(
                b.ERR_LIBSSH,
                "libssh transport error: failed to authenticate: Access denied for 'publickey'",
                66,
            ),
            errors.PERMANENT,
        ),
        ("get", lv(b.ERR_SSH, "Host key verification failed.", b.FROM_SSH), errors.PERMANENT),
        (
            "get",
            lv(b.ERR_SYSTEM_ERROR, "unable to connect to server at '127.0.0.1:22': Connection refused"),
            "transient",
        ),
        (
            "get",
            lv(b.ERR_LIBSSH, "libssh transport error: Remote command terminated with non-zero code: 1", 66),
            "transient",
        ),
        (
            "get",
            lv(b.ERR_SYSTEM_ERROR, "End of file while reading data: Input/output error"),
            errors.TRANSIENT,
        ),
        ("get", lv(b.ERR_RPC, "rpc"), errors.TRANSIENT),
        ("get", lv(b.ERR_OPERATION_TIMEOUT), errors.TRANSIENT),
        ("get", lv(b.ERR_INTERNAL_ERROR), errors.TRANSIENT),
        ("create", lv(b.ERR_OPERATION_INVALID), errors.TRANSIENT),
        ("get", CallAbandoned("x"), errors.TRANSIENT),
        ("get", DeadlineExceeded("x"), errors.TRANSIENT),
        ("create", CredentialsUnavailable("x"), errors.TRANSIENT),
        ("create", LibraryMissing("x"), errors.PERMANENT),
        ("create", metadata.MarksError("x"), errors.PERMANENT),
        ("create", Permanent("x"), errors.PERMANENT),
        ("create", Transient("x"), errors.TRANSIENT),
        ("create", Quota("x"), errors.QUOTA_EXCEEDED),
        ("create", urllib.error.HTTPError("u", 404, "nf", {}, None), errors.PERMANENT),
        ("create", urllib.error.HTTPError("u", 429, "slow", {}, None), errors.TRANSIENT),
        ("create", urllib.error.HTTPError("u", 503, "down", {}, None), errors.TRANSIENT),
        ("create", urllib.error.URLError("refused"), errors.TRANSIENT),
        ("create", TimeoutError("t"), errors.TRANSIENT),
        ("create", ValueError("not a libvirt error"), errors.TRANSIENT),
        ("create", errors.permanent("create", "p", "i", "kept"), errors.PERMANENT),
    ],
)
def test_classify_table(op, exc, want):
    assert classify(op, exc) == want


def test_nothing_but_a_missing_domain_in_get_is_not_found():
    for code in range(0, 110):
        for op in ("create", "get", "delete", "list", "check"):
            got = classify(op, lv(code))
            assert (got == errors.NOT_FOUND) == (op == "get" and code == b.ERR_NO_DOMAIN), (op, code)


def test_key_paths_left_out_come_from_the_environment(monkeypatch):
    """What AWX's "Egress proxies libvirt SSH" credential injects (docs/awx.md)."""
    block = {k: v for k, v in GOOD.items() if k not in ("sshKeyFile", "knownHostsFile")}
    monkeypatch.delenv("EGRESS_PROXIES_LIBVIRT_SSH_KEY_FILE", raising=False)
    monkeypatch.delenv("EGRESS_PROXIES_LIBVIRT_KNOWN_HOSTS_FILE", raising=False)
    with pytest.raises(ConfigError) as exc_info:
        config.parse({"providers": [{"name": "hv", "type": "kvm", "kvm": block}]})
    assert "providers[0].kvm.sshKeyFile" in str(exc_info.value)
    monkeypatch.setenv("EGRESS_PROXIES_LIBVIRT_SSH_KEY_FILE", "/runner/env/tmpkey")
    monkeypatch.setenv("EGRESS_PROXIES_LIBVIRT_KNOWN_HOSTS_FILE", "/runner/env/tmphosts")
    parsed = config.parse({"providers": [{"name": "hv", "type": "kvm", "kvm": block}]}).providers[0].block
    assert (parsed.ssh_key_file, parsed.known_hosts_file) == ("/runner/env/tmpkey", "/runner/env/tmphosts")
    # The block's own paths win; insecureIgnoreHostKey takes no known_hosts from the environment.
    assert parse_block().ssh_key_file == GOOD["sshKeyFile"]
    insecure = dict(block, insecureIgnoreHostKey=True)
    parsed = config.parse({"providers": [{"name": "hv", "type": "kvm", "kvm": insecure}]}).providers[0].block
    assert parsed.known_hosts_file == "" and parsed.insecure_ignore_host_key
    # A relative path from the environment is refused like one in the block, naming the field.
    monkeypatch.setenv("EGRESS_PROXIES_LIBVIRT_SSH_KEY_FILE", "relative")
    with pytest.raises(ConfigError) as exc_info:
        config.parse({"providers": [{"name": "hv", "type": "kvm", "kvm": block}]})
    assert "providers[0].kvm.sshKeyFile" in str(exc_info.value)
