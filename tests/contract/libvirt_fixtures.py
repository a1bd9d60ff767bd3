"""Session fixtures for every test that needs the real hypervisor: import ``libvirt_host`` and
``image_host`` into the test module. One host per process, however many modules import them:
the first fixture use starts it, the last session finalizer stops it."""

from __future__ import annotations

import tempfile

import pytest
from fakes.image_server import ImageServer

from contract.libvirt_host import LibvirtHost, make_image

_shared = {"host": None, "images": None, "users": 0}


class Images:
    """The loopback HTTP server plus the base image it serves (``/base.qcow2``)."""

    def __init__(self):
        self.server = ImageServer()
        with tempfile.TemporaryDirectory() as scratch:
            self.data, self.sha256 = make_image(scratch)
        self.server.files["/base.qcow2"] = self.data

    @property
    def url(self) -> str:
        return self.server.url("/base.qcow2")


def _acquire():
    if _shared["host"] is None:
        _shared["host"] = LibvirtHost().start()
        _shared["images"] = Images()
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
    return host


@pytest.fixture(scope="session")
def image_host(libvirt_host):
    return _shared["images"]
