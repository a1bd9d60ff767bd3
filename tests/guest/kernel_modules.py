"""The kernel modules the test guest loads, with their dependencies, in load order.

On Debian's cloud kernel virtio, virtio_pci, virtio_net, virtio_console, virtio_scsi, the SCSI
CD-ROM driver and iso9660 are modules, not built in (and it has no AHCI at all, which is why
the provider attaches the seed on virtio-scsi). The package ships no modules.dep (depmod runs at install
time) and kmod is not needed here: each module's ``.modinfo`` section names its dependencies in
a ``depends=`` string, which is all the ordering needs.
"""

from __future__ import annotations

import os
import re

# What the init script needs: the NIC, the guest-agent port, the seed CD-ROM (virtio-scsi) and
# its file system.
WANTED = ("virtio_pci", "virtio_net", "virtio_console", "virtio_scsi", "sr_mod", "isofs")


def index(modules_root: str) -> dict:
    """module name -> path of its .ko under ``modules_root`` (names with '-' read as '_')."""
    found = {}
    for directory, _dirs, files in os.walk(modules_root):
        for name in files:
            if name.endswith(".ko"):
                found[name[:-3].replace("-", "_")] = os.path.join(directory, name)
    return found


def dependencies(path: str) -> list:
    with open(path, "rb") as handle:
        data = handle.read()
    match = re.search(rb"\x00depends=([^\x00]*)\x00", data)
    if not match or not match.group(1):
        return []
    return [name.decode().replace("-", "_") for name in match.group(1).split(b",") if name]


def load_order(modules_root: str, wanted=WANTED) -> list:
    """Paths of the wanted modules and their dependencies, every module after what it needs."""
    known = index(modules_root)
    order, visiting = [], set()

    def visit(name):
        if name not in known:
            raise RuntimeError("kernel module %s is not in %s" % (name, modules_root))
        path = known[name]
        if path in order or name in visiting:
            return
        visiting.add(name)
        for dep in dependencies(path):
            visit(dep)
        order.append(path)

    for name in wanted:
        visit(name)
    return order
