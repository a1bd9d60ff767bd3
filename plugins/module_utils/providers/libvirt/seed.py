# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The NoCloud seed: an ISO 9660 image labelled ``cidata`` holding user-data, meta-data and
vendor-data, built in memory (it is a few KiB) and uploaded as the instance's seed volume.

pycdlib writes the image: a pure-Python, long-maintained ISO 9660 library that also writes the
Joliet and Rock Ridge names cloud-init's NoCloud reader relies on for ``user-data`` and
``meta-data``; hand-writing both-endian directory records and path tables here would be more
code to get wrong for no gain. Guarded import: a missing pycdlib fails ``create`` Permanent.
The contents are cloud-init (may hold secrets): never logged, only their byte counts.
"""

from __future__ import annotations

import io

try:
    import pycdlib

    PYCDLIB_IMPORT_ERROR = None
except ImportError as _exc:  # pragma: no cover - depends on the host
    pycdlib = None
    PYCDLIB_IMPORT_ERROR = str(_exc)

VOLUME_LABEL = "cidata"
EMPTY_USER_DATA = "#cloud-config\n{}\n"

# Installs and starts the QEMU guest agent on first boot, so Get can read the guest's
# addresses from inside (the most reliable source). Works on Debian/Ubuntu and RHEL families.
GUEST_AGENT_VENDOR_DATA = """#cloud-config
packages:
  - qemu-guest-agent
runcmd:
  - [sh, -c, "systemctl enable --now qemu-guest-agent || service qemu-guest-agent start || true"]
"""


class SeedLibraryMissing(Exception):
    """pycdlib is not installed where the module runs."""


def meta_data(name: str) -> str:
    return "instance-id: %s\nlocal-hostname: %s\n" % (name, name)


def vendor_data(configured: str, install_guest_agent: bool) -> str:
    """The configured vendor-data, else the guest-agent installer when asked for, else nothing."""
    if configured:
        return configured
    return GUEST_AGENT_VENDOR_DATA if install_guest_agent else ""


def build(name: str, user_data: str, vendor: str) -> bytes:
    if pycdlib is None:
        raise SeedLibraryMissing(
            "the pycdlib library is required to build the NoCloud seed (pip install pycdlib): %s"
            % PYCDLIB_IMPORT_ERROR
        )
    files = [
        ("USER_DATA", "user-data", (user_data or EMPTY_USER_DATA).encode("utf-8")),
        ("META_DATA", "meta-data", meta_data(name).encode("utf-8")),
    ]
    if vendor:
        files.append(("VENDOR_DATA", "vendor-data", vendor.encode("utf-8")))
    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=3, joliet=3, rock_ridge="1.09", vol_ident=VOLUME_LABEL)
    try:
        for iso_name, long_name, data in files:
            iso.add_fp(
                io.BytesIO(data),
                len(data),
                "/%s.;1" % iso_name,
                rr_name=long_name,
                joliet_path="/" + long_name,
            )
        out = io.BytesIO()
        iso.write_fp(out)
    finally:
        iso.close()
    return out.getvalue()
