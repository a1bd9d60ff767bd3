"""A guest's boot, as far as cloud-init takes the user-data a gcp or kvm provider builds with
auth, really executed: cloud-init's own code (tests/cloud_init_run.py --execute) writes the
files and runs the stages' scripts as root, in a private mount namespace whose ``/etc`` is a
throwaway overlay with an empty ``/etc/squid`` (Squid not yet installed, as on a fresh image;
the host's /etc is untouched). The request's ``#!`` script installs Squid's configuration
(allowing the loopback range); then the real Squid is started on the squid.conf the boot left
and must answer 407 without credentials and forward with them. Before issue 40 §5 the include
ran in ``runcmd``, before the script, found no squid.conf, and the proxy served everyone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import pytest
from proxy_traffic import fetch_via, origin_server

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import cloud_init_auth, proxy_auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import create

pytestmark = pytest.mark.squid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HARNESS = os.path.join(ROOT, "tests", "cloud_init_run.py")
AUTH = proxy_auth.Auth("crawler", "s3cret-pw")

USER_SCRIPT = """#!/bin/sh
# The request's script: "installs" Squid (its configuration: this host has the binary), opening
# the proxy to the loopback range, as a request's own rules do.
set -e
mkdir -p /etc/squid
cat > /etc/squid/squid.conf <<'CONF'
http_port 127.0.0.1:{port}
pid_filename none
cache_log {scratch}/cache.log
access_log none
coredump_dir /tmp
shutdown_lifetime 1 seconds
pinger_enable off
acl loopback_clients src 127.0.0.0/8
http_access allow loopback_clients
http_access deny all
CONF
echo installed >> {scratch}/steps.log
"""

# Inside the namespace: /etc as an overlay on the host's, an empty /etc/squid, `systemctl` a stub
# that logs (no systemd here; the test starts Squid itself from what the boot left).
BOOT = """set -e
mount -t overlay overlay -o lowerdir=/etc,upperdir={scratch}/etc-upper,workdir={scratch}/etc-work /etc
mount -t tmpfs tmpfs /etc/squid
export PATH={scratch}/bin:/usr/sbin:/usr/bin:/sbin:/bin
/usr/bin/python3 {harness} {user_data} {scratch}/guest --execute > {scratch}/run.json 2> {scratch}/run.err
cp /etc/squid/squid.conf {scratch}/squid.conf.after
/usr/sbin/squid -N -f /etc/squid/squid.conf > {scratch}/squid.out 2>&1 &
echo $! > {scratch}/squid.pid
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _request(cloud_init: str) -> contract.CreateRequest:
    return contract.CreateRequest(name="proxy-aaaaaaaaaaaaaaaa", uid="u-1", cloud_init=cloud_init, auth=AUTH)


PROVIDERS = {"gcp": insert.user_data, "kvm, kvm2": lambda req: create.user_data(req)[0]}


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_a_scripted_guest_enforces_auth_after_its_boot(provider, tmp_path):
    scratch = tmp_path
    for sub in ("etc-upper", "etc-work", "bin"):
        (scratch / sub).mkdir()
    stub = scratch / "bin" / "systemctl"
    stub.write_text('#!/bin/sh\necho "systemctl $*" >> %s/steps.log\n' % scratch)
    stub.chmod(0o755)
    port = _free_port()
    user_data = scratch / "user-data"
    user_data.write_text(PROVIDERS[provider](_request(USER_SCRIPT.format(port=port, scratch=scratch))))
    boot = BOOT.format(scratch=scratch, harness=HARNESS, user_data=user_data)
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", boot],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    pid = int((scratch / "squid.pid").read_text()) if (scratch / "squid.pid").exists() else 0
    try:
        assert done.returncode == 0, done.stderr + _read(scratch / "run.err")[-3000:]
        assert not os.path.exists(cloud_init_auth.AUTH_DIR), "the host's /etc was written"
        with origin_server() as origin:
            status = _until_answered(port, origin, None, pid)
            assert status == 407, "served without credentials (%d)" % status
            assert _until_answered(port, origin, (AUTH.username, AUTH.password), pid) == 200
            assert _until_answered(port, origin, (AUTH.username, "wrong"), pid) == 407
        run = json.loads((scratch / "run.json").read_text())
        assert run["failed"] == [], run["failed"]
        steps = (scratch / "steps.log").read_text().splitlines()
        assert steps == ["installed", "systemctl restart squid"], steps  # the restart after the install
        conf = (scratch / "squid.conf.after").read_text().splitlines()
        assert conf[0] == "include %s" % cloud_init_auth.SNIPPET, conf[:3]
    finally:
        if pid:
            _stop(pid)


def _until_answered(port: int, origin, credentials, pid: int) -> int:
    deadline = time.monotonic() + 30
    while True:
        try:
            return fetch_via("127.0.0.1", port, origin, credentials=credentials)[0]
        except OSError:
            assert time.monotonic() < deadline and _alive(pid), "squid did not start"
            time.sleep(0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _stop(pid: int) -> None:
    os.kill(pid, 15)
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)


def _read(path) -> str:
    return path.read_text() if path.exists() else ""
