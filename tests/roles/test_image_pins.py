"""The images are reproducible: every base image (controller/Containerfile's FROM lines, the
execution environment's base_image) is pinned by a digest, and the controller image installs
(through controller/install.sh) its Python packages only from controller/requirements.lock and
its dependency collections only from the hash-pinned ``ansible`` wheel; the lock pins every
requirement the repository declares (requirements.txt, controller/requirements.txt, controller/pyproject.toml
and its build requirement) with hashes, at versions those declarations accept, and is closed:
each locked package's own dependencies (as installed here, where the versions match) are locked
too. Images cannot be pulled on this machine, so the digests themselves are not fetched.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import tomllib

import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCK = os.path.join(ROOT, "controller", "requirements.lock")
PINNED = re.compile(r"^[\w./:-]+@sha256:[0-9a-f]{64}$")


def _read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


def _from_images() -> list:
    """Each FROM's image, with ``${ARG}`` replaced by the ARG's default; stage names skipped."""
    text = _read("controller", "Containerfile")
    args = dict(re.findall(r"^ARG (\w+)=(\S+)$", text, re.M))
    stages, images = set(), []
    for image, stage in re.findall(r"^FROM (\S+)(?: AS (\S+))?$", text, re.M):
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
        if image not in stages:
            images.append(image)
        if stage:
            stages.add(stage)
    return images


def _lock() -> dict:
    """``{name: (version, [hashes])}`` of the lock file (pip's hash-checking format)."""
    entries, current = {}, None
    for line in _read("controller", "requirements.lock").splitlines():
        line = line.split(" #")[0].strip() if not line.lstrip().startswith("--hash") else line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"^([A-Za-z0-9._-]+)==([^\s\\;]+)", line)
        if match:
            current = canonicalize_name(match.group(1))
            entries[current] = (match.group(2), [])
        for digest in re.findall(r"--hash=sha256:([0-9a-f]{64})", line):
            entries[current][1].append(digest)
    return entries


def _declared() -> list:
    """Every requirement the repository declares for the image."""
    reqs = []
    for name in ("requirements.txt", os.path.join("controller", "requirements.txt")):
        for line in _read(name).splitlines():
            line = line.split("#")[0].strip()
            if line:
                reqs.append(Requirement(line))
    with open(os.path.join(ROOT, "controller", "pyproject.toml"), "rb") as handle:
        project = tomllib.load(handle)
    reqs += [Requirement(r) for r in project["project"]["dependencies"]]
    reqs += [Requirement(r) for r in project["build-system"]["requires"]]
    return reqs


def test_every_base_image_is_pinned_by_digest():
    images = _from_images()
    assert len(images) == 2 and len(set(images)) == 1, images  # build and final share the one base
    for image in images:
        assert PINNED.match(image), "FROM %s: not pinned by a digest" % image
    ee = yaml.safe_load(_read("execution-environment.yml"))
    base = ee["images"]["base_image"]["name"]
    assert PINNED.match(base), "base_image %s: not pinned by a digest" % base
    assert "fedora" not in base  # a base with a long support life


def test_the_image_installs_only_from_the_lock_with_hashes():
    """Every install step is controller/install.sh's (the script `make test` installs with too),
    and each of its pip installs is hash-checked or reaches no index."""
    text = _read("controller", "Containerfile")
    assert not re.search(r"\bpip (install|download)\b", text), "an install step outside controller/install.sh"
    steps = re.findall(r"install\.sh (debs build|debs runtime|python|collections|controller)\b", text)
    assert sorted(set(steps)) == ["collections", "controller", "debs build", "debs runtime", "python"], steps
    assert "COPY controller/requirements.lock " in text  # its own layer, cached while sources change
    script = _read("controller", "install.sh")
    installs = [line for line in script.splitlines() if re.search(r"\bpip_ install\b", line)]
    assert any("--require-hashes" in line and "requirements.lock" in line for line in installs), installs
    for line in installs:  # everything else installs nothing from an index
        assert "--require-hashes" in line or ("--no-deps" in line and "--no-index" in line), line
    # The dependency collections come from the `ansible` wheel, itself pinned by its hash.
    pins = _read("hack", "collections.txt")
    assert re.search(r"^ansible==\S+ --hash=sha256:[0-9a-f]{64}$", pins, re.M), pins
    assert "--require-hashes" in _read("hack", "install_collections.py")


def test_the_lock_pins_every_declared_requirement_with_hashes():
    lock = _lock()
    assert lock, "empty lock"
    for name, (_version, hashes) in lock.items():
        assert hashes, "%s has no hash" % name
    for req in _declared():
        name = canonicalize_name(req.name)
        assert name in lock, "%s is declared but not locked" % req
        assert req.specifier.contains(lock[name][0], prereleases=True), "%s: locked %s" % (req, lock[name][0])


def test_the_lock_is_closed_over_dependencies():
    """Each locked package installed here at the locked version: its requirements (for the
    image's platform, evaluated as here: CPython 3.11 on Linux) are locked as well."""
    lock = _lock()
    environment = default_environment()
    checked = 0
    for name, (version, _hashes) in lock.items():
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if dist.version != version:
            continue
        checked += 1
        for raw in dist.requires or []:
            req = Requirement(raw)
            if req.marker is not None and not req.marker.evaluate(dict(environment, extra="")):
                continue
            assert canonicalize_name(req.name) in lock, "%s needs %s, which is not locked" % (name, req)
    assert checked >= len(lock) // 2, "too few locked packages installed here to check (%d)" % checked
