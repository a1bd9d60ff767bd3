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

import pytest
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
    recipe, context = _create(tmp_path, "execution-environment.yml", ())
    build = context / "_build"
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


def _create(tmp_path, recipe: str, tarballs: tuple) -> tuple:
    """``ansible-builder create`` of ``recipe`` with ``tarballs`` (names, empty files) added to
    build/; returns (the generated Containerfile's text, the context directory)."""
    shutil.copy(os.path.join(ROOT, recipe), tmp_path / recipe)
    for name in ("requirements.txt", "bindep.txt"):
        shutil.copy(os.path.join(ROOT, name), tmp_path / name)
    (tmp_path / "build").mkdir(exist_ok=True)
    for name in tarballs:
        (tmp_path / "build" / name).write_bytes(b"")
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-builder"), "create", "-f", recipe, "-c", "context"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    context = tmp_path / "context"
    return next(
        p for p in (context / "Containerfile", context / "Dockerfile") if p.exists()
    ).read_text(), context


def _base_stage_runs(recipe: str) -> list:
    """The RUN lines of the base stage, in order."""
    stage = recipe.split(" AS base\n", 1)[1].split("\nFROM ", 1)[0]
    return [line[len("RUN ") :] for line in stage.splitlines() if line.startswith("RUN ")]


def test_the_ee_on_ansible_core_2_16_is_the_same_recipe_with_that_core(tmp_path):
    """Automation Platform 2.5's EEs ship ansible-core 2.16: execution-environment-2.16.yml is
    a tested choice, identical to the main recipe but for the pin, and its build context installs
    that ansible-core and the collection tarball."""
    with open(os.path.join(ROOT, "execution-environment.yml"), encoding="utf-8") as handle:
        main = yaml.safe_load(handle)
    with open(os.path.join(ROOT, "execution-environment-2.16.yml"), encoding="utf-8") as handle:
        core216 = yaml.safe_load(handle)
    with open(os.path.join(ROOT, "tests", "matrix", "versions.env"), encoding="utf-8") as handle:
        matrix = handle.read()
    assert 'MATRIX_2_16="2.16.19 ' in matrix, "the EE pins the 2.16 patch the matrix tests"
    assert core216["dependencies"].pop("ansible_core") == {"package_pip": "ansible-core==2.16.19"}
    main["dependencies"].pop("ansible_core")
    assert core216 == main, "execution-environment-2.16.yml drifted from execution-environment.yml"
    recipe, context = _create(
        tmp_path, "execution-environment-2.16.yml", ("crawl-egress_proxies-9.9.9.tar.gz",)
    )
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core==2.16.19 ansible-runner==2.4.3"' in recipe
    assert (context / "_build" / "collection" / "crawl-egress_proxies-9.9.9.tar.gz").exists()
    galaxy = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert galaxy["collections"][0]["name"] == "/tmp/egress-proxies-collection/crawl-egress_proxies.tar.gz"


@pytest.mark.parametrize(
    "tarballs",
    [(), ("crawl-egress_proxies-0.1.0.tar.gz", "crawl-egress_proxies-0.2.0.tar.gz")],
    ids=["missing", "two"],
)
@pytest.mark.parametrize("recipe_file", ["execution-environment.yml", "execution-environment-2.16.yml"])
def test_the_recipe_refuses_a_missing_or_ambiguous_tarball_first(tmp_path, recipe_file, tarballs):
    """`ansible-builder create` only warns when build/ holds no tarball and copies every one it
    finds (issue 37): the build's first step must refuse both, saying what to run. The step is
    run here with sh on the generated context (no container engine here), as the build runs it."""
    recipe, context = _create(tmp_path, recipe_file, tarballs)
    check = _base_stage_runs(recipe)[0]
    assert "exactly one crawl-egress_proxies-*.tar.gz" in check, (
        "the first RUN of the build checks the tarball"
    )
    assert "COPY _build/ /tmp/egress-proxies-build/" in recipe.split(check)[0]
    proc = subprocess.run(
        ["sh", "-c", check.replace("/tmp/egress-proxies-build", str(context / "_build"))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "build/ must hold exactly one crawl-egress_proxies-*.tar.gz" in proc.stderr
    assert "ansible-galaxy collection build --output-path build/" in proc.stderr
    for name in tarballs:
        assert name in proc.stderr


def test_the_recipe_takes_exactly_one_tarball(tmp_path):
    recipe, context = _create(tmp_path, "execution-environment.yml", ("crawl-egress_proxies-0.2.0.tar.gz",))
    check = _base_stage_runs(recipe)[0]
    copy = shutil.copytree(context / "_build", tmp_path / "copy")  # the step removes what it checked
    proc = subprocess.run(
        ["sh", "-c", check.replace("/tmp/egress-proxies-build", str(copy))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert not copy.exists()
