"""A renderer for the kustomize subset controller/config uses (``resources``, ``components``,
``images`` and ``patches`` on a target named by kind and name: inline JSON 6902 operations, or a
strategic merge patch ``$patch: delete``), for tests on machines without a kustomize binary.

Any other kustomization field is refused rather than ignored, so a manifest change that needs
real kustomize fails here loudly instead of being rendered wrongly. Where ``kubectl`` is on
PATH, tests/controller/test_kustomize.py also checks that ``kubectl kustomize`` renders the same.
"""

from __future__ import annotations

import os

import yaml

SUPPORTED = {"apiVersion", "kind", "resources", "components", "images", "patches"}


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
    for patch in doc.get("patches", []):
        _patch(directory, objects, patch)
    return objects, sources


def _patch(directory: str, objects: list[dict], patch: dict) -> None:
    """An inline JSON 6902 patch (add, replace, remove) of the one object of the target's kind and name."""
    target = patch.get("target", {})
    if set(patch) != {"target", "patch"} or set(target) != {"kind", "name"}:
        raise ValueError("%s: only inline JSON 6902 patches of a kind and name are supported" % directory)
    matches = [o for o in objects if (o["kind"], o["metadata"]["name"]) == (target["kind"], target["name"])]
    if len(matches) != 1:
        raise ValueError("%s: patch target %s matches %d objects" % (directory, target, len(matches)))
    body = yaml.safe_load(patch["patch"])
    if isinstance(body, dict):  # a strategic merge patch: only the deletion of the target
        if body.get("$patch") != "delete" or (body.get("kind"), body.get("metadata", {}).get("name")) != (
            target["kind"],
            target["name"],
        ):
            raise ValueError("%s: of strategic merge patches only $patch: delete is supported" % directory)
        objects.remove(matches[0])
        return
    for op in body:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        node = matches[0]
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            index = len(node) if last == "-" else int(last)
            if op["op"] == "add":
                node.insert(index, op["value"])
            elif op["op"] == "replace":
                node[index] = op["value"]
            elif op["op"] == "remove":
                del node[index]
            else:
                raise ValueError("%s: unsupported op %s" % (directory, op["op"]))
        elif op["op"] in ("add", "replace"):
            if op["op"] == "replace" and last not in node:
                raise ValueError("%s: replace of a missing %s" % (directory, op["path"]))
            node[last] = op["value"]
        elif op["op"] == "remove":
            del node[last]
        else:
            raise ValueError("%s: unsupported op %s" % (directory, op["op"]))
