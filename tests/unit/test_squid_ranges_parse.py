"""Every squid.conf the collection generates, for a table of source-range sets x auth on and off
x the providers that write one, parsed by the real ``squid -k parse``: no ERROR and no WARNING
(but Via's, which ``via off`` draws on purpose). ``0.0.0.0/0`` used to become Squid's ``all``
(IPv6 clients too) with an ERROR, and an overlap or a duplicate drew "is a subnetwork ...
ignored" warnings (issue 40 §6); what each set is written as is pinned too."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
import time

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, squid_conf
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import cloud_init_auth, proxy_auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import pod as podlib
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.config import (
    KubernetesConfig,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.config import LocalConfig
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.provider import (
    LocalProvider,
)

pytestmark = pytest.mark.squid

SQUID = "/usr/sbin/squid"
MAPPED = ipaddress.ip_network("::ffff:0:0/96")  # how Squid sees an IPv4 client
EVERY_V6_BUT_MAPPED = [str(n) for n in ipaddress.ip_network("::/0").address_exclude(MAPPED)]

# (label, allowedSourceRanges, what the acl lists)
RANGE_SETS = [
    ("every ipv4", ["0.0.0.0/0"], ["0.0.0.0/1", "128.0.0.0/1"]),
    ("every ipv4 with host bits", ["10.0.0.1/0"], ["0.0.0.0/1", "128.0.0.0/1"]),
    ("every ipv4 and a subnet of it", ["0.0.0.0/0", "10.0.0.0/8"], ["0.0.0.0/1", "128.0.0.0/1"]),
    ("overlap", ["10.0.0.0/8", "10.1.0.0/16"], ["10.0.0.0/8"]),
    ("duplicate", ["10.0.0.0/8", "10.0.0.0/8"], ["10.0.0.0/8"]),
    ("same range, host bits", ["127.0.0.1/8", "127.0.0.0/8"], ["127.0.0.0/8"]),
    ("adjacent", ["10.0.0.0/9", "10.128.0.0/9"], ["10.0.0.0/8"]),
    ("one host", ["192.0.2.7/32"], ["192.0.2.7/32"]),
    ("every ipv6", ["::/0"], sorted(EVERY_V6_BUT_MAPPED, key=ipaddress.ip_network)),
    ("ipv6 holding the mapped block", ["::/1"], None),
    ("ipv6 overlap", ["fd00::/8", "fd00:1::/32", "fd00::/8"], ["fd00::/8"]),
    ("ipv4-mapped is ipv4", ["::ffff:10.1.0.0/112", "10.0.0.0/8"], ["10.0.0.0/8"]),
    ("both families, everything", ["0.0.0.0/0", "::/0"], None),
    ("mixed", ["127.0.0.0/8", "::1/128", "100.64.0.0/10", "2001:db8::1/64"], None),
]


def _local(ranges: list, auth: bool) -> str:
    block = LocalConfig.model_validate({"allowedSourceRanges": ranges, "stateDir": "/tmp/i40-guest-unused"})
    provider = LocalProvider("local", "test", block)
    record = {"address": "127.9.8.1", "port": 40123}
    return provider._squid_conf("proxy-abcdefghijklmnop", record, ("proxy",), auth)


def _kubernetes(ranges: list, auth: bool) -> str:
    cfg = KubernetesConfig.model_validate({"allowedSourceRanges": ranges})
    auth_spec = proxy_auth.Auth(username="u", password="p") if auth else None
    req = contract.CreateRequest(
        name="proxy-aaaaaaaaaaaaaaaa", uid="u-1", namespace="crawl", port=3128, auth=auth_spec
    )
    return podlib.build_config_map(req, "crawl", "default", cfg, "pod-uid")["data"][podlib.CONF_KEY]


PROVIDERS = {"local": _local, "kubernetes": _kubernetes}


def squid_problems(conf_text: str, tmp_path) -> list:
    path = tmp_path / "squid.conf"
    path.write_text(conf_text)
    out = subprocess.run(
        [SQUID, "-k", "parse", "-f", str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    text = out.stdout + out.stderr
    found = [
        line
        for line in text.splitlines()
        if ("ERROR" in line or "WARNING" in line or "FATAL" in line)
        and "HTTP requires the use of Via" not in line
    ]
    if out.returncode != 0:
        found.append("exit status %d" % out.returncode)
    return found


def acl_ranges(conf_text: str) -> list:
    (line,) = [line for line in conf_text.splitlines() if line.startswith("acl allowed_src src ")]
    return line.split()[3:]


@pytest.mark.parametrize("auth", [False, True], ids=["no-auth", "auth"])
@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize(("ranges", "expected"), [r[1:] for r in RANGE_SETS], ids=[r[0] for r in RANGE_SETS])
def test_every_generated_conf_parses_without_error_or_warning(provider, auth, ranges, expected, tmp_path):
    conf = PROVIDERS[provider](ranges, auth)
    assert squid_problems(conf, tmp_path) == []
    written = acl_ranges(conf)
    if expected is not None:
        assert written == expected
    assert "all" not in written


@pytest.mark.parametrize(("ranges", "_expected"), [r[1:] for r in RANGE_SETS], ids=[r[0] for r in RANGE_SETS])
def test_the_written_ranges_cover_exactly_the_asked_clients(ranges, _expected):
    """Per family: an IPv4 client is admitted iff an IPv4 (or IPv4-mapped) range holds it, an
    IPv6 one iff an IPv6 range does; Squid sees an IPv4 client as ``::ffff:a.b.c.d``."""
    written = [ipaddress.ip_network(r) for r in squid_conf.src_ranges(ranges)]
    asked = [ipaddress.ip_network(r, strict=False) for r in ranges]
    probes = ["0.0.0.0", "10.1.2.3", "127.0.0.1", "128.0.0.1", "192.0.2.7", "255.255.255.255", "100.64.0.1"]
    probes += ["::", "::1", "fd00::1", "fd00:1::1", "2001:db8::5", "8000::1", "ffff::1", "::fffe:0:1"]
    for probe in map(ipaddress.ip_address, probes):
        if probe.version == 4:
            want = any(probe in n for n in asked if n.version == 4) or any(
                ipaddress.ip_address("::ffff:%s" % probe) in n
                for n in asked
                if n.version == 6 and n.subnet_of(MAPPED)
            )
        else:
            want = any(probe in n for n in asked if n.version == 6)
        assert any(probe in n for n in written if n.version == probe.version) == want, probe
    assert not any(n.version == 6 and n.overlaps(MAPPED) for n in written)


@pytest.mark.parametrize("auth", [False, True], ids=["no-auth", "auth"])
def test_the_guest_auth_snippet_parses_first_in_a_squid_conf(auth, tmp_path):
    """gcp, kvm, kvm2: the collection writes no ranges (the request's cloud-init does), only the
    auth snippet it includes on squid.conf's first line; that too parses clean."""
    snippet = tmp_path / "auth.conf"
    snippet.write_text(cloud_init_auth.snippet(str(tmp_path / "passwd")))
    user = squid_conf.render(squid_conf.SquidSettings(listen="3128", allowed=("10.0.0.0/8",)))
    conf = ("include %s\n" % snippet if auth else "") + user
    assert squid_problems(conf, tmp_path) == []


def test_the_check_sees_what_main_wrote(tmp_path):
    """Guards the table: Squid does complain about the ranges as they used to be written."""
    assert any(
        "needs to be replaced by the term 'all'" in p for p in squid_problems(_raw(["0.0.0.0/0"]), tmp_path)
    )
    assert any("is a subnetwork" in p for p in squid_problems(_raw(["10.0.0.0/8", "10.0.0.0/8"]), tmp_path))


def _raw(ranges: list) -> str:
    return (
        "http_port 3128\npid_filename none\nacl a src %s\nhttp_access allow a\nhttp_access deny all\n"
        % " ".join(ranges)
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _status(family: int, address: str, port: int, origin: int) -> int:
    """The status Squid answers a plain request from this family's loopback: 403 when the
    source is refused, another (the unreachable origin's 503) when it is admitted."""
    with socket.socket(family) as conn:
        conn.settimeout(20)
        conn.connect((address, port))
        conn.sendall(b"GET http://127.0.0.1:%d/ HTTP/1.0\r\n\r\n" % origin)
        return int(conn.recv(64).split()[1])


@pytest.mark.parametrize(
    ("ranges", "v4_admitted", "v6_admitted"),
    [(["0.0.0.0/0"], True, False), (["::/0"], False, True), (["::/1"], False, True)],
    ids=["every ipv4", "every ipv6", "ipv6 holding the mapped block"],
)
def test_real_squid_admits_only_the_asked_family(ranges, v4_admitted, v6_admitted, tmp_path):
    """What the normalising is for, shown with traffic: as given, ``0.0.0.0/0`` (Squid's ``all``)
    also admitted IPv6 clients, ``::/0`` admitted nobody and ``::/1`` every IPv4 client."""
    v4, v6, origin = _free_port(), _free_port(), _free_port()  # nothing listens on origin
    conf = squid_conf.render(
        squid_conf.SquidSettings(listen="127.0.0.1:%d" % v4, allowed=tuple(ranges), effective_user="proxy")
    )
    conf += "http_port [::1]:%d\n" % v6
    path = tmp_path / "squid.conf"
    path.write_text(conf)
    squid = subprocess.Popen(
        [SQUID, "-N", "-f", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                got = (
                    _status(socket.AF_INET, "127.0.0.1", v4, origin),
                    _status(socket.AF_INET6, "::1", v6, origin),
                )
                break
            except OSError:
                assert squid.poll() is None and time.monotonic() < deadline, "squid did not start"
                time.sleep(0.2)
    finally:
        squid.terminate()
        squid.wait(timeout=30)
    assert (got[0] != 403, got[1] != 403) == (v4_admitted, v6_admitted), got
