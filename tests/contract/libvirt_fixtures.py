"""Session fixtures for every test that needs the real hypervisor: import ``libvirt_host`` and
``image_host`` (and ``backend``, the kvm2 harness) into the test module. One host per process,
however many modules import them: the first fixture use starts it, the last session finalizer
stops it. A start that failed is not tried again by every later test: they fail at once with
the same error. The domain type the host chose (hypervisor_probe.py) is printed once, past
pytest's capture, and again in the summary."""

from __future__ import annotations

import tempfile

import pytest
from fakes.image_server import ImageServer

from contract.libvirt_backend import LibvirtContractBackend
from contract.libvirt_host import LibvirtHost, make_image

_shared = {"host": None, "images": None, "users": 0, "error": None}
ANNOUNCED: list = []  # the "test hypervisor: ..." lines of this session (conftest prints them)


def announce(config, line: str) -> None:
    """One line on the terminal now (pytest captures fixture output) and in the summary."""
    if line in ANNOUNCED:
        return
    ANNOUNCED.append(line)
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if capture is None or reporter is None:
        print(line)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


class Images:
    """The loopback HTTP server plus the base image it serves (``/base.qcow2``)."""

    def __init__(self):
        self.server = ImageServer()
        with tempfile.TemporaryDirectory() as scratch:
            self.data, self.sha256 = make_image(scratch)
        self.server.files["/base.qcow2"] = self.data
        self._made = 0

    @property
    def url(self) -> str:
        return self.server.url("/base.qcow2")

    def distinct(self, label: str) -> tuple:
        """A qcow2 of content no other image of this process has (base volumes are named by
        content, so a test that needs a download of its own needs its own bytes), served at
        ``/<label>-<n>.qcow2``; returns ``(path, data, sha256)``."""
        self._made += 1
        with tempfile.TemporaryDirectory() as scratch:
            data, sha256 = make_image(scratch, size="%dM" % (64 + self._made))
        path = "/%s-%d.qcow2" % (label, self._made)
        self.server.files[path] = data
        return path, data, sha256


def _acquire():
    if _shared["error"] is not None:
        raise RuntimeError("the test hypervisor failed to start earlier in this session") from _shared[
            "error"
        ]
    if _shared["host"] is None:
        try:
            host = LibvirtHost().start()
        except Exception as exc:
            _shared["error"] = exc
            raise
        try:
            _shared["images"] = Images()
        except BaseException:
            host.stop()
            raise
        _shared["host"] = host
    _shared["users"] += 1
    return _shared["host"], _shared["images"]


def _release():
    _shared["users"] -= 1
    if _shared["users"] == 0:
        images, host = _shared["images"], _shared["host"]
        _shared["host"] = _shared["images"] = None
        try:
            images.server.close()
        finally:
            host.stop()


@pytest.fixture(scope="session")
def libvirt_host(request):
    host, _images = _acquire()
    request.addfinalizer(_release)
    announce(request.config, host.choice.line)
    return host


@pytest.fixture(scope="session")
def image_host(libvirt_host):
    return _shared["images"]


@pytest.fixture
def backend(libvirt_host, image_host):
    """The contract harness for ``kvm2`` on the shared host; its teardown checks for leftovers."""
    harness = LibvirtContractBackend(libvirt_host, image_host)
    try:
        yield harness
    finally:
        harness.teardown()
