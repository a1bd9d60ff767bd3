"""What the gcp guest's Squid does with the collection's auth part, checked with the real Squid:
a squid.conf laid out as Debian's and Ubuntu's (a user's ``http_access allow`` of the clients'
range, as the provider docs' sample has) with the include the part's command puts on its first
line. A request without credentials, or with wrong ones, gets 407 although the user's rule
allows its source; the right credentials go through."""

from __future__ import annotations

import os
import pathlib
import pwd
import shutil
import subprocess
import tempfile
import time

import pytest
from listen_ports import free_port
from proxy_traffic import fetch_via, origin_server

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import cloud_init_auth, proxy_auth

pytestmark = pytest.mark.squid
SQUID = shutil.which("squid") or shutil.which("squid", path="/usr/sbin:/usr/local/sbin")
AUTH = proxy_auth.Auth("crawler", "guest-pass")


@pytest.fixture
def guest_squid():
    """Squid on 127.0.0.1 configured as a gcp guest would be once the part's command ran, in a
    directory its effective user can enter (pytest's tmp_path is under a 0700 directory)."""
    assert SQUID, "squid is not installed (make test installs it through hack/bootstrap.sh)"
    tmp_path = pathlib.Path(tempfile.mkdtemp(prefix="guest-squid-"))
    tmp_path.chmod(0o755)
    passwd = tmp_path / "passwd"
    passwd.write_text(AUTH.passwd_line())
    passwd.chmod(0o600)
    user = []
    if os.geteuid() == 0:  # Squid drops to its effective user; the helper reads the file as it
        os.chown(passwd, pwd.getpwnam("proxy").pw_uid, -1)
        user = ["cache_effective_user proxy"]
    (tmp_path / "auth.conf").write_text(cloud_init_auth.snippet(str(passwd)))
    port = free_port()
    conf = tmp_path / "squid.conf"
    conf.write_text(
        "\n".join(
            [
                "http_port 127.0.0.1:%d" % port,
                "pid_filename none",
                "cache_log /dev/stderr",
                "pinger_enable off",
                "coredump_dir /tmp",
                "access_log none",
                "cache deny all",
                "shutdown_lifetime 1 seconds",
                *user,
                "acl clients src 127.0.0.0/8",  # the user's part: its clients' range allowed
                "http_access allow clients",
                "http_access deny all",
                "",
            ]
        )
    )
    command = cloud_init_auth.include_command(str(conf), str(tmp_path / "auth.conf"), restart="true")
    subprocess.run(["sh", "-c", command], check=True)
    log = open(tmp_path / "cache.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen([SQUID, "-N", "-f", str(conf)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with origin_server() as probe_origin:
                    fetch_via("127.0.0.1", port, probe_origin)
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "cache.log").read_text()
                assert time.monotonic() < deadline, "squid did not listen"
                time.sleep(0.3)
        yield port
    finally:
        proc.terminate()
        proc.wait(15)
        log.close()
        shutil.rmtree(tmp_path)


def test_the_users_allow_rule_cannot_open_the_proxy_without_credentials(guest_squid):
    with origin_server() as origin:
        assert fetch_via("127.0.0.1", guest_squid, origin)[0] == 407
        assert fetch_via("127.0.0.1", guest_squid, origin, credentials=("crawler", "wrong"))[0] == 407
        status, body = fetch_via("127.0.0.1", guest_squid, origin, credentials=("crawler", "guest-pass"))
        assert (status, body) == (200, "hello /via-proxy")
