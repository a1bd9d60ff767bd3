"""The controller's one version (controller/pyproject.toml, the same as the collection's
galaxy.yml and the image tag), as ``--version``, the build-info metric and the User-Agent the
API server sees (its audit log names the client by it)."""

from __future__ import annotations

PRODUCT = "egress-proxies-controller"


def package_version() -> str:
    """The installed package's version, or a notice when the tree was never pip-installed."""
    from importlib import metadata

    try:
        return metadata.version(PRODUCT)
    except metadata.PackageNotFoundError:  # a source tree on PYTHONPATH, never pip-installed
        return "unknown (not installed: pip install ./controller)"


def user_agent() -> str:
    """``egress-proxies-controller/<version>``, as client-go names itself ``<binary>/<version>``."""
    version = package_version()
    return "%s/%s" % (PRODUCT, version if not version.startswith("unknown") else "unknown")
