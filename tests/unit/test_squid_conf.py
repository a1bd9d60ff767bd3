"""Unit tests for squid_conf.render: never ``allow all``, exactly the allowed ranges, and a
config the real Squid accepts (``squid -k parse``)."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.squid_conf import (
    SquidSettings,
    render,
)

SQUID = "/usr/sbin/squid"

CONFIGS = {
    "minimal": SquidSettings(listen="3128", allowed=("127.0.0.0/8",)),
    "local instance": SquidSettings(
        listen="127.9.8.1:40123",
        allowed=("127.0.0.0/8", "10.1.2.0/24"),
        pid_file="none",
        cache_log="cache.log",
        access_log="access.log",
        effective_user="proxy",
        outgoing_address="127.9.8.1",
        coredump_dir=".",
        visible_hostname="proxy-abcdefghijklmnop",
    ),
    "ipv6 and host bits": SquidSettings(
        listen="127.0.0.1:3129",
        allowed=("::1/128", "127.0.0.5/8", "192.168.1.7/32"),
        access_log="/dev/null",
    ),
    "with auth": SquidSettings(listen="127.0.0.1:3130", allowed=("127.0.0.0/8",), auth_file="passwd"),
}


def http_access(text: str) -> list:
    return [line for line in text.splitlines() if line.startswith("http_access")]


@pytest.mark.parametrize("settings", CONFIGS.values(), ids=list(CONFIGS))
def test_never_allows_all_and_denies_the_rest(settings):
    text = render(settings)
    rules = http_access(text)
    assert "http_access allow all" not in rules
    assert rules[-1] == "http_access deny all"
    allow = [
        "http_access allow allowed_src authenticated"
        if settings.auth_file
        else "http_access allow allowed_src"
    ]
    assert [r for r in rules if " allow " in r] == allow


def test_auth_refuses_out_of_range_before_asking_for_credentials():
    rules = http_access(render(CONFIGS["with auth"]))
    assert rules.index("http_access deny !allowed_src") < rules.index("http_access deny !authenticated")
    assert rules[-2:] == ["http_access allow allowed_src authenticated", "http_access deny all"]
    text = render(CONFIGS["with auth"]).splitlines()
    assert "auth_param basic program /usr/lib/squid/basic_ncsa_auth passwd" in text
    assert "acl authenticated proxy_auth REQUIRED" in text
    assert not [line for line in render(CONFIGS["minimal"]).splitlines() if "auth" in line]


@pytest.mark.parametrize("field", ["auth_file", "auth_helper", "auth_realm"])
def test_auth_settings_must_be_single_words(field):
    values = {"auth_file": "passwd", field: "two words\nhttp_access allow all"}
    with pytest.raises(ValueError, match="single words"):
        render(SquidSettings(listen="3128", allowed=("127.0.0.0/8",), **values))


def test_contains_each_allowed_range_normalised():
    text = render(CONFIGS["ipv6 and host bits"])
    (acl,) = [line for line in text.splitlines() if line.startswith("acl allowed_src ")]
    assert acl.split()[3:] == ["127.0.0.0/8", "192.168.1.7/32", "::1/128"]  # IPv4 first, then IPv6


def test_listen_and_options():
    text = render(CONFIGS["local instance"]).splitlines()
    for line in (
        "http_port 127.9.8.1:40123",
        "cache_effective_user proxy",
        "tcp_outgoing_address 127.9.8.1",
        "access_log stdio:access.log",
        "cache_log cache.log",
        "visible_hostname proxy-abcdefghijklmnop",
        "cache deny all",
    ):
        assert line in text
    minimal = render(CONFIGS["minimal"]).splitlines()
    assert "access_log none" in minimal
    assert not [line for line in minimal if line.startswith(("cache_effective_user", "tcp_outgoing_address"))]


def test_rejects_empty_ranges():
    with pytest.raises(ValueError, match="at least one allowed source range"):
        render(SquidSettings(listen="3128", allowed=()))


@pytest.mark.parametrize("bad", ["all", "nope", "127.0.0.0/33", ""])
def test_rejects_non_cidr(bad):
    with pytest.raises(ValueError):
        render(SquidSettings(listen="3128", allowed=("127.0.0.0/8", bad)))


@pytest.mark.squid
@pytest.mark.parametrize("settings", CONFIGS.values(), ids=list(CONFIGS))
def test_real_squid_accepts_the_config(tmp_path, settings):
    assert os.access(SQUID, os.X_OK), "squid is installed by hack/bootstrap.sh"
    conf = tmp_path / "squid.conf"
    conf.write_text(render(settings))
    out = subprocess.run(
        [SQUID, "-k", "parse", "-f", str(conf)], capture_output=True, text=True, timeout=60, check=False
    )
    output = out.stdout + out.stderr
    assert out.returncode == 0, output
    assert "FATAL" not in output and "ERROR" not in output, output


@pytest.mark.squid
def test_real_squid_rejects_a_broken_config(tmp_path):
    """Guards the test above: ``squid -k parse`` does fail on a bad directive."""
    conf = tmp_path / "squid.conf"
    conf.write_text(render(CONFIGS["minimal"]) + "http_access allow no_such_acl\n")
    out = subprocess.run(
        [SQUID, "-k", "parse", "-f", str(conf)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode != 0, out.stdout + out.stderr
