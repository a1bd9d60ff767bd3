"""kvm2's SSH credential errors name the file and the problem's class, never libvirt's text.

The dial is real: libvirt-python's own SSH client (libssh2, as the provider dials) against a
real sshd on loopback. A key problem is found by the SSH layer before any libvirtd is asked,
so no hypervisor runs here. The key file is malformed around a sentinel: neither the
provider's error, nor a module's failure, nor its -vvv output and debug log, nor the check's
status may contain the sentinel or the key parser's words; each names sshKeyFile's path. A
known_hosts that does not match names knownHostsFile and never quotes the host's key."""

from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import (
    CreateRequest,
    Placement,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt.provider import (
    LibvirtProvider,
)

from .playbook import run_playbook

pytestmark = [pytest.mark.playbook]
SSHD = "/usr/sbin/sshd"
# What libvirt's SSH clients answer for an unreadable key (libssh2, libssh): must not be quoted.
PARSER_WORDS = ("Can't retrieve private key passphrase", "No user interaction callback", "wrong passphrase")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def sshd(tmp_path):
    """A real sshd on 127.0.0.1 (its own host key and config); stopped by its pid."""
    ssh = tmp_path / "sshd"
    ssh.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh / "host")], check=True)
    port = _free_port()
    (ssh / "config").write_text(
        "Port %d\nListenAddress 127.0.0.1\nHostKey %s\nPidFile none\nUsePAM no\nStrictModes no\n"
        "AuthorizedKeysFile %s\n" % (port, ssh / "host", ssh / "authorized")
    )
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation directory
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(ssh / "config")], stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < end, "sshd did not start"
                time.sleep(0.05)
        host_key = (ssh / "host.pub").read_text().split()[:2]
        yield {"port": port, "host_key": " ".join(host_key)}
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def sentinel():
    return "SENTINEL%s" % uuid.uuid4().hex


@pytest.fixture
def bad_key(tmp_path, sentinel):
    path = tmp_path / "id_bad"
    path.write_text(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA%s\n%s==\n"
        "-----END OPENSSH PRIVATE KEY-----\n" % (sentinel, sentinel)
    )
    os.chmod(path, 0o600)
    return str(path)


def _block(sshd, key: str, known_hosts: str = "") -> dict:
    block = {
        "sshKeyFile": key,
        "images": {"base": {"url": "http://127.0.0.1:9/base.qcow2", "sha256": "0" * 64}},
        "machineTypes": {"tiny": {"vcpus": 1, "memoryMiB": 128}},
        "hosts": [{"name": "hv1", "address": "127.0.0.1:%d" % sshd["port"], "user": "root"}],
    }
    if known_hosts:
        block["knownHostsFile"] = known_hosts
    else:
        block["insecureIgnoreHostKey"] = True
    return block


def _provider(block: dict) -> LibvirtProvider:
    parsed = providers_file.parse({"providers": [{"name": "hv", "type": "kvm2", "kvm2": block}]})
    return LibvirtProvider("kvm2", "hv", parsed.installation, parsed.providers[0].block)


def _request() -> CreateRequest:
    uid = str(uuid.uuid4())
    return CreateRequest(
        name="proxy-%s" % uid[:16],
        uid=uid,
        placement=Placement(zone="hv1", machine_type="tiny", image="base"),
    )


def _clean(text: str, sentinel: str) -> None:
    assert sentinel not in text
    for words in PARSER_WORDS:
        assert words not in text, "libvirt's parser text reached a message: %s" % words


def test_a_malformed_key_is_named_by_file_and_class_through_the_provider(sshd, bad_key, sentinel):
    provider = _provider(_block(sshd, bad_key))
    try:
        with pytest.raises(errors.ProviderError) as failure:
            provider.create(_request(), Deadline(30))
        (status,) = provider.check(Deadline(30))
    finally:
        provider.close()
    message = str(failure.value)
    _clean(message, sentinel)
    assert "sshKeyFile %s" % bad_key in message and "could not be used" in message, message
    assert failure.value.error_class == errors.PERMANENT  # an admin must fix the file
    _clean(status.message, sentinel)
    assert "sshKeyFile %s" % bad_key in status.message and status.reason == "Unauthorized"


def test_a_changed_host_key_names_known_hosts_and_never_quotes_the_key(sshd, tmp_path):
    key = tmp_path / "id_ok"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    other = (tmp_path / "id_ok.pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text("[127.0.0.1]:%d %s\n" % (sshd["port"], " ".join(other)))
    provider = _provider(_block(sshd, str(key), str(known)))
    try:
        with pytest.raises(errors.ProviderError) as failure:
            provider.list_by_tag(Deadline(30))
    finally:
        provider.close()
    message = str(failure.value)
    assert "knownHostsFile %s" % known in message and failure.value.error_class == errors.PERMANENT
    assert other[1] not in message and sshd["host_key"].split()[1] not in message


def test_a_malformed_key_in_a_module_run_reaches_no_output(sshd, bad_key, sentinel, tmp_path):
    defaults = {"providers": [{"name": "hv", "type": "kvm2", "kvm2": _block(sshd, bad_key)}]}
    tasks = [
        {
            "name": "create",
            "crawl.egress_proxies.proxy_instance": {
                "provider": "hv",
                "uid": str(uuid.uuid4()),
                "placement": {"zone": "hv1", "machine_type": "tiny", "image": "base"},
            },
            "ignore_errors": True,
        },
        {"name": "check", "crawl.egress_proxies.proxy_check": {}, "ignore_errors": True},
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=defaults, verbosity=3)
    create = run["create"]
    assert create.get("failed") and create["error_class"] == errors.PERMANENT, create
    assert "sshKeyFile %s" % bad_key in create["msg"], create["msg"]
    for text in (run.stdout, run.stderr):
        _clean(text, sentinel)
