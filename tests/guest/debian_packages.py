"""Debian packages as the test guest's only source: download them with ``apt-get download`` (the
machine's configured Debian mirror, nothing else), unpack them side by side, and find the shared
libraries a binary needs among what was unpacked.

The library closure follows ``Depends`` only through ``lib*`` packages: a binary's libraries
come from those, while following every dependency would pull in perl, python and systemd.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess

LIB_DIRS = ("lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib64", "usr/lib64")
INTERPRETER = "lib64/ld-linux-x86-64.so.2"


def candidate_versions(packages: list) -> dict:
    """The versions ``apt-get download`` would fetch (part of the image's cache key)."""
    out = subprocess.run(
        ["apt-cache", "policy", *packages], capture_output=True, text=True, check=True
    ).stdout
    found = dict(re.findall(r"^(\S+):\n(?:  .*\n)*?  Candidate:\s*(\S+)", out, re.M))
    for package in packages:
        if found.get(package, "(none)") == "(none)":
            raise RuntimeError("Debian package %s has no installable candidate (apt-get update?)" % package)
    return {package: found[package] for package in packages}


def depends(packages: list) -> dict:
    """Direct ``Depends`` of each package (one apt-cache call): first alternative of each,
    virtual packages dropped."""
    out = subprocess.run(
        ["apt-cache", "depends", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks",
         "--no-replaces", "--no-enhances", *packages],
        capture_output=True,
        text=True,
        check=True,
    ).stdout  # fmt: skip
    found, current, alternative = {}, None, False
    for line in out.splitlines():
        if not line.startswith(" "):
            current = found.setdefault(line.strip().split(":")[0], [])
            alternative = False
            continue
        stripped = line.strip()
        match = re.match(r"\|?(Pre)?Depends: (\S+)", stripped)
        if not match or current is None:
            continue
        name = match.group(2)
        if not alternative and not name.startswith("<"):
            current.append(name.split(":")[0])
        alternative = stripped.startswith("|")  # the next line is an alternative of this one
    return found


def library_closure(roots: list) -> list:
    """The roots plus every ``lib*`` package reachable from them through ``Depends``."""
    seen, level = [], list(roots)
    while level:
        seen.extend(level)
        found = depends(level)
        level = sorted(
            {dep for deps in found.values() for dep in deps if dep.startswith("lib") and dep not in seen}
        )
    return seen


def download(packages: list, directory: str) -> list:
    """``apt-get download`` into ``directory``; returns the .deb paths."""
    os.makedirs(directory, exist_ok=True)
    os.chmod(directory, 0o777)  # apt's sandbox user writes here
    done = subprocess.run(
        ["apt-get", "download", "-q", *packages], cwd=directory, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError("apt-get download failed: %s" % done.stderr.strip()[-1000:])
    debs = sorted(glob.glob(os.path.join(directory, "*.deb")))
    if len(debs) < len(packages):
        raise RuntimeError("apt-get download fetched %d of %d packages" % (len(debs), len(packages)))
    return debs


def unpack(debs: list, root: str) -> None:
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)


def needed(path: str) -> list:
    """The ``DT_NEEDED`` sonames of an ELF file."""
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def find_library(root: str, soname: str) -> str:
    for lib_dir in LIB_DIRS:
        path = os.path.join(root, lib_dir, soname)
        if os.path.exists(path):
            return path
    raise RuntimeError("library %s is in none of the unpacked packages" % soname)


def copy_with_libraries(root: str, binaries: list, dest: str) -> list:
    """Copy each binary (a path inside ``root``) to the same path under ``dest``, and every
    library it needs, transitively, to ``dest/lib/x86_64-linux-gnu``; returns the sonames."""
    libs_dest = os.path.join(dest, "lib/x86_64-linux-gnu")
    os.makedirs(libs_dest, exist_ok=True)
    copied, todo = [], []
    for binary in binaries:
        target = os.path.join(dest, binary)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(root, binary), target)
        todo.extend(needed(target))
    while todo:
        soname = todo.pop(0)
        if soname in copied:
            continue
        source = os.path.realpath(find_library(root, soname))
        shutil.copy2(source, os.path.join(libs_dest, soname))
        copied.append(soname)
        todo.extend(needed(source))
    interpreter = os.path.join(dest, INTERPRETER)
    os.makedirs(os.path.dirname(interpreter), exist_ok=True)
    shutil.copy2(os.path.realpath(os.path.join(root, INTERPRETER)), interpreter)
    return copied
