# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Whether an answer is about the object that was asked for (issue 28 §5).

A 200 for ``GET .../instances/proxy-target`` proves nothing about ``proxy-target`` unless its
body names it: a misrouting proxy, a cache or a wrong endpoint can answer with another
instance, with ``{}``, or with another project's object. Taken at face value such an answer
reports another VM's address as ours, or lets ``absent`` check one VM's labels and then delete
another. So every object the provider reads is checked here against what it asked for (name,
zone, project) before it is used; a mismatch is ``WrongSubject``, which classifies Transient:
never an instance, never NotFound (the kubernetes provider applies the same rule).

The project and zone are read from the resource URLs the API always sends (``zone``,
``selfLink``, ``targetLink``); a bare name where the API sends a URL is compared as a name.
"""

from __future__ import annotations


class WrongSubject(Exception):
    """An answer about some other object than the one asked for (or about none): Transient."""


def _segments(url: str) -> dict:
    """``{"projects": p, "zones": z, "instances": n, ...}`` from a Compute resource URL."""
    parts = [p for p in (url or "").split("?", 1)[0].split("/") if p]
    return {parts[i]: parts[i + 1] for i in range(len(parts) - 1)}


def _require(what: str, condition: bool, detail: str) -> None:
    if not condition:
        raise WrongSubject("the API answered about another object than %s: %s" % (what, detail))


def _check_url(what: str, field: str, url, expected: dict) -> None:
    """``url`` (when the answer has it) names exactly the ``expected`` collection segments."""
    if url is None:
        return
    _require(what, isinstance(url, str), "%s is %r" % (field, url))
    found = _segments(url)
    if "/" not in url.strip("/") and len(expected) == 1:  # a bare name where a URL is usual
        found = {next(iter(expected)): url}
    for key, value in expected.items():
        _require(what, found.get(key) == value, "%s %r does not name %s %s" % (field, url, key, value))


def instance(item, project: str, zone: str, name: str) -> dict:
    """``item`` if it is instance ``name`` of ``zone`` in ``project``, else ``WrongSubject``."""
    what = "instance %s in zone %s" % (name, zone)
    _require(what, isinstance(item, dict), "the answer is not an object")
    _require(what, item.get("name") == name, "its name is %r" % (item.get("name", ""),))
    _require(what, bool(item.get("zone")), "it names no zone")
    _check_url(what, "zone", item.get("zone"), _with_project({"zones": zone}, item.get("zone"), project))
    _check_url(
        what, "selfLink", item.get("selfLink"), {"projects": project, "zones": zone, "instances": name}
    )
    return item


def _with_project(expected: dict, url, project: str) -> dict:
    """Require the project too where the URL carries one (a full URL always does)."""
    if isinstance(url, str) and "/projects/" in "/" + url.lstrip("/"):
        return {"projects": project, **expected}
    return expected


def listed_instance(item, project: str, zone: str) -> dict:
    """An aggregated list's item under scope ``zones/<zone>``: it must be in that zone."""
    name = item.get("name", "") if isinstance(item, dict) else ""
    return instance(item, project, zone, name or "?")


def zone_operation(op, project: str, zone: str, name: str) -> dict:
    """A zone operation listed for instance ``name``: it must target that instance."""
    what = "an operation on instance %s in zone %s" % (name, zone)
    _require(what, isinstance(op, dict) and bool(op.get("name")), "the operation has no name")
    _require(what, bool(op.get("targetLink")), "operation %s names no target" % op.get("name"))
    _check_url(what, "targetLink", op["targetLink"], {"projects": project, "zones": zone, "instances": name})
    if op.get("zone") is not None:
        _check_url(what, "zone", op["zone"], _with_project({"zones": zone}, op["zone"], project))
    return op


def operation(op, project: str, name: str) -> dict:
    """An operation read back by its own ``name`` (a global operation being waited for)."""
    what = "operation %s" % name
    _require(what, isinstance(op, dict), "the answer is not an object")
    _require(what, op.get("name") == name, "its name is %r" % (op.get("name", ""),))
    if op.get("selfLink") is not None:
        _check_url(what, "selfLink", op["selfLink"], {"projects": project, "operations": name})
    return op


def named(kind: str, item, project: str, name: str, collection: str) -> dict:
    """A global or regional object (a firewall rule, a region) read by ``name``."""
    what = "%s %s" % (kind, name)
    _require(what, isinstance(item, dict), "the answer is not an object")
    _require(what, item.get("name") == name, "its name is %r" % (item.get("name", ""),))
    if item.get("selfLink") is not None:
        _check_url(what, "selfLink", item["selfLink"], {"projects": project, collection: name})
    return item
