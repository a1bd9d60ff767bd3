"""The dialer's transport: libssh2 first, libssh only where libvirt was built without libssh2
(libssh stalls on some replies: docs/libvirt-provider.md, "Connections"), over a stand-in for
``libvirt.open`` so no hypervisor is needed."""

from __future__ import annotations

import logging
import types

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    classify,
    libvirt_backend,
)

libvirt = pytest.importorskip("libvirt")


def fake_error(code: int, message: str) -> libvirt.libvirtError:
    """A libvirtError as libvirt-python raises it, with libvirt's error tuple."""
    libvirt.virResetLastError()
    exc = libvirt.libvirtError(message)
    exc.err = (code, 7, message, 2, None, None, None, 0, 0)
    return exc


@pytest.fixture
def dialer(tmp_path):
    for name in ("id", "known"):
        (tmp_path / name).write_text("x")
    cfg = types.SimpleNamespace(
        ssh_key_file=str(tmp_path / "id"),
        known_hosts_file=str(tmp_path / "known"),
        insecure_ignore_host_key=False,
    )
    return libvirt_backend.LibvirtDialer(cfg)


HOST = types.SimpleNamespace(user="root", address="192.0.2.10", socket="")


def opener(monkeypatch, built_in: tuple):
    """``libvirt.open`` that knows only the transports in ``built_in``; returns the URIs asked."""
    asked = []

    def fake_open(uri):
        asked.append(uri)
        transport = uri.split("://")[0].split("+")[1]
        if transport not in built_in:
            raise fake_error(backend.ERR_SYSTEM_ERROR, "%s transport support was not enabled" % transport)
        return object()

    monkeypatch.setattr(libvirt_backend.libvirt, "open", fake_open)
    return asked


def test_libssh2_is_dialled_where_libvirt_has_it(monkeypatch, dialer):
    asked = opener(monkeypatch, ("libssh2", "libssh"))
    dialer.dial(HOST)
    assert [u.split("://")[0] for u in asked] == ["qemu+libssh2"]


def test_without_libssh2_falls_back_to_libssh_once_with_a_warning(monkeypatch, dialer, caplog):
    asked = opener(monkeypatch, ("libssh",))
    with caplog.at_level(logging.WARNING, logger="crawl.egress_proxies.providers.libvirt"):
        dialer.dial(HOST)
        dialer.dial(HOST)
    assert [u.split("://")[0] for u in asked] == ["qemu+libssh2", "qemu+libssh", "qemu+libssh"]
    assert sum("falling back to libssh" in r.getMessage() for r in caplog.records) == 1


def test_other_dial_errors_are_not_retried_on_libssh(monkeypatch, dialer):
    asked = []

    def refused(uri):
        asked.append(uri)
        raise fake_error(backend.ERR_SYSTEM_ERROR, "unable to connect to server: Connection refused")

    monkeypatch.setattr(libvirt_backend.libvirt, "open", refused)
    with pytest.raises(backend.LibvirtCallError) as exc_info:
        dialer.dial(HOST)
    assert exc_info.value.code == backend.ERR_SYSTEM_ERROR and len(asked) == 1


def test_both_transports_take_the_same_parameters():
    libssh2 = libvirt_backend.uri_for(HOST, "/k/id", "/k/known", False)
    libssh = libvirt_backend.uri_for(HOST, "/k/id", "/k/known", False, "libssh")
    assert libssh2.startswith("qemu+libssh2://root@192.0.2.10/system?")
    assert libssh2.split("?")[1] == libssh.split("?")[1]


@pytest.mark.parametrize(
    "code, message",
    [  # libssh2, as seen against the test sshd: wrong host key, unknown host key, refused key
        (backend.ERR_AUTH_FAILED, "authentication failed: !!! SSH HOST KEY VERIFICATION FAILED !!!"),
        (backend.ERR_SSH, "SSH transport error: No user interaction callback provided: Can't verify"),
        (backend.ERR_AUTH_FAILED, "authentication failed: ... Username/PublicKey combination invalid"),
    ],
)
def test_libssh2_refusals_are_permanent(code, message):
    exc = backend.LibvirtCallError(code, message, backend.FROM_SSH)
    assert classify.classify("list", exc) == errors.PERMANENT
