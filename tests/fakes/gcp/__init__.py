"""A local fake of the Compute Engine REST API (v1), driven by the real google-cloud-compute
client through ``apiEndpoint``. ``FakeCompute`` (server.py) is the entry point."""

from fakes.gcp.server import FakeCompute

__all__ = ["FakeCompute"]
