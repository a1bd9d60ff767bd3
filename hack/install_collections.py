"""Install the collections of hack/collections.txt into a collections path, from the ``ansible``
package's wheel, without installing that package.

Why not ``pip install ansible``: it would put ~100 collections into site-packages, where
ansible-core finds them beside (and could prefer them to) the project's own path; only the
pinned few the roles use are wanted. Why not ansible-galaxy: Galaxy is not reachable here.

Usage: install_collections.py PINS COLLECTIONS_PATH. Fast when everything is installed (reads
MANIFEST.json only); otherwise ``pip download``s the pinned wheel, hash-checked (the pins file
carries its sha256), copies each collection's directory into place (atomically, by rename) and checks that
the version it ships is the pinned one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile


def read_pins(path: str) -> tuple[str, dict[str, str]]:
    """The ``ansible==X --hash=sha256:H`` requirement and {collection: version} of the pins file."""
    package, collections = "", {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#")[0].strip()
            if not line:
                continue
            name, version = line.split("==", 1) if "==" in line else (line, "")
            if not version:
                raise SystemExit("%s: %r is not NAME==VERSION" % (path, line))
            if name == "ansible":
                if not re.search(r" --hash=sha256:[0-9a-f]{64}$", version):
                    raise SystemExit("%s: %r has no --hash=sha256:... of the wheel" % (path, line))
                package = line
            else:
                collections[name] = version
    if not package:
        raise SystemExit("%s: no ansible==VERSION line" % path)
    return package, collections


def installed_version(root: str, name: str) -> str:
    """The version of the collection installed under ``root``, or "" when there is none."""
    namespace, collection = name.split(".")
    manifest = os.path.join(root, "ansible_collections", namespace, collection, "MANIFEST.json")
    try:
        with open(manifest, encoding="utf-8") as handle:
            return json.load(handle)["collection_info"]["version"]
    except (OSError, ValueError, KeyError):
        return ""


def extract(wheel: str, name: str, version: str, root: str) -> None:
    """Copy one collection out of the wheel to ``root``, replacing what was there."""
    namespace, collection = name.split(".")
    prefix = "ansible_collections/%s/%s/" % (namespace, collection)
    target = os.path.join(root, "ansible_collections", namespace, collection)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    staging = tempfile.mkdtemp(prefix=".%s-" % collection, dir=os.path.dirname(target))
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.namelist() if m.startswith(prefix)]
        if not members:
            raise SystemExit("%s does not ship %s" % (os.path.basename(wheel), name))
        archive.extractall(staging, members)
    staged = os.path.join(staging, prefix)
    shipped = installed_version(staging, name)
    if shipped != version:
        shutil.rmtree(staging)
        raise SystemExit(
            "%s ships %s %s, not the pinned %s" % (os.path.basename(wheel), name, shipped, version)
        )
    if os.path.islink(target) or os.path.isfile(target):
        os.unlink(target)
    elif os.path.isdir(target):
        shutil.rmtree(target)
    os.rename(staged, target)
    shutil.rmtree(staging)


def main(pins_file: str, root: str) -> int:
    package, collections = read_pins(pins_file)
    missing = {n: v for n, v in collections.items() if installed_version(root, n) != v}
    if not missing:
        return 0
    print(
        "==> installing the collections %s from %s"
        % (", ".join("%s %s" % i for i in missing.items()), package.split()[0])
    )
    with tempfile.TemporaryDirectory() as download:
        # Hash-checked: a wheel that is not the pinned one is refused.
        requirement = os.path.join(download, "requirement.txt")
        with open(requirement, "w", encoding="utf-8") as handle:
            handle.write(package + "\n")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--disable-pip-version-check",
                "--no-deps",
                "--only-binary=:all:",
                "--require-hashes",
                "--dest",
                download,
                "-r",
                requirement,
            ],
            check=True,
        )
        wheel = next(os.path.join(download, f) for f in os.listdir(download) if f.endswith(".whl"))
        for name, version in missing.items():
            extract(wheel, name, version, root)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
