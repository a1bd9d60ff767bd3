"""Fixtures of the unit tests: a real loopback HTTP server serving base images."""

import pytest
from fakes.image_server import ImageServer


@pytest.fixture
def image_server():
    server = ImageServer()
    try:
        yield server
    finally:
        server.close()
