"""A renderer for the kustomize subset controller/config uses (``resources``, ``components`` and
``images``), for tests on machines without a kustomize binary.

Any other kustomization field is refused rather than ignored, so a manifest change that needs
real kustomize fails here loudly instead of being rendered wrongly. Where ``kubectl`` is on
PATH, tests/controller/test_kustomize.py also checks that ``kubectl kustomize`` renders the same.
"""

from __future__ import annotations

import os

import yaml

SUPPORTED = {"apiVersion", "kind", "resources", "components", "images"}


def _documents(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [doc for doc in yaml.safe_load_all(handle) if doc is not None]


def _kustomization(directory: str) -> dict:
    (doc,) = _documents(os.path.join(directory, "kustomization.yaml"))
    unknown = set(doc) - SUPPORTED
    if unknown:
        raise ValueError(
            "%s: kustomization fields this renderer does not support: %s" % (directory, sorted(unknown))
        )
    return doc


def _set_images(objects: list[dict], images: list[dict]) -> None:
    for image in images:
        for obj in objects:
            spec = obj.get("spec", {}).get("template", {}).get("spec", {})
            for container in spec.get("containers", []) + spec.get("initContainers", []):
                name, _sep, tag = container["image"].partition(":")
                if name == image["name"]:
                    container["image"] = "%s:%s" % (image.get("newName", name), image.get("newTag", tag))


def render(directory: str) -> list[dict]:
    """The objects ``kustomize build directory`` would print (resources, then components)."""
    return render_with_sources(directory)[0]


def render_with_sources(directory: str) -> tuple[list[dict], list[str]]:
    """``render`` plus the manifest files it read, in order."""
    doc = _kustomization(directory)
    objects, sources = [], []
    for entry in doc.get("resources", []) + doc.get("components", []):
        target = os.path.normpath(os.path.join(directory, entry))
        if os.path.isdir(target):
            rendered, files = render_with_sources(target)
            objects += rendered
            sources += files
        else:
            objects += _documents(target)
            sources.append(target)
    _set_images(objects, doc.get("images", []))
    return objects, sources
