"""The execution environment recipe: ``ansible-builder create`` (the part of ``ansible-builder
build`` that needs no container engine) turns execution-environment.yml into a build context
that installs this collection (from the tarball ansible-galaxy builds) with every provider's
Python and system requirements. The image itself needs podman or docker, which CI lacks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def _requirement_names(path: str) -> set:
    with open(path, encoding="utf-8") as handle:
        lines = [line.split("#")[0].strip() for line in handle]
    return {line.split(">")[0].split("=")[0].split("<")[0].split("[")[0].strip() for line in lines if line}


def test_ansible_builder_creates_a_context_with_the_collection_and_every_requirement(tmp_path):
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        version = yaml.safe_load(handle)["version"]
    with open(os.path.join(ROOT, "execution-environment.yml"), encoding="utf-8") as handle:
        ee = yaml.safe_load(handle)
    tarball = "crawl-egress_proxies-%s.tar.gz" % version
    assert ee["version"] == 3
    assert ee["additional_build_files"][0]["src"] == "build/crawl-egress_proxies-*.tar.gz"
    assert "0.1" not in yaml.safe_dump(ee) and version not in yaml.safe_dump(ee), "no version in the EE"
    for name in ("execution-environment.yml", "requirements.txt", "bindep.txt"):
        shutil.copy(os.path.join(ROOT, name), tmp_path / name)
    subprocess.run(
        [
            os.path.join(BIN, "ansible-galaxy"),
            "collection",
            "build",
            "--output-path",
            str(tmp_path / "build"),
            ROOT,
        ],
        check=True,
        capture_output=True,
    )
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-builder"), "create", "-f", "execution-environment.yml", "-c", "context"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    context = tmp_path / "context"
    build = context / "_build"
    recipe = next(p for p in (context / "Containerfile", context / "Dockerfile") if p.exists()).read_text()
    assert (build / "collection" / tarball).exists()
    assert "COPY _build/collection/ /tmp/egress-proxies-collection/" in recipe
    renamed = "/tmp/egress-proxies-collection/crawl-egress_proxies.tar.gz"
    assert "crawl-egress_proxies-*.tar.gz " + renamed in recipe
    assert "ansible-galaxy" in recipe and "requirements.yml" in recipe
    assert "install-from-bindep" in recipe
    # AWX writes credential files under random names; the EE names no path it does not write.
    assert "/runner/env" not in recipe and "EGRESS_PROXIES_PROVIDERS_FILE" not in recipe
    galaxy = yaml.safe_load((build / "requirements.yml").read_text())
    assert galaxy["collections"][0]["name"] == "/tmp/egress-proxies-collection/crawl-egress_proxies.tar.gz"
    assert {c["name"]: c.get("version") for c in galaxy["collections"][1:]} == {
        "kubernetes.core": "6.2.0",
        "ansible.posix": "2.1.0",
    }
    # Every provider's Python client, and the system packages of local and kvm/kvm2.
    python = _requirement_names(str(build / "requirements.txt"))
    assert {"pydantic", "PyYAML", "kubernetes", "libvirt-python", "pycdlib", "google-cloud-compute"} <= python
    # Tracing export from the modules (the OTEL_* variables in a job template's environment).
    assert {"opentelemetry-sdk", "opentelemetry-exporter-otlp-proto-http"} <= python
    bindep = (build / "bindep.txt").read_text()
    for package in (
        "squid [platform:rpm]",
        "libvirt-libs [platform:rpm]",
        "libvirt-devel [platform:rpm compile]",
    ):
        assert package in bindep
    # The collection's own metadata points ansible-builder's introspection at the same files.
    with open(os.path.join(ROOT, "meta", "execution-environment.yml"), encoding="utf-8") as handle:
        meta = yaml.safe_load(handle)
    assert meta["dependencies"] == {"python": "requirements.txt", "system": "bindep.txt"}
