# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""``--diff`` for the modules that create or delete instances: what appears or disappears.

Ansible shows a result's ``diff`` (one ``{before, after}`` mapping, or a list of them) as a
YAML diff. An instance that does not exist on one side is an empty mapping there, as
``kubernetes.core.k8s`` shows a created or deleted object. Nothing secret is in a side:
cloud-init is never part of it.
"""

from __future__ import annotations

import dataclasses


def side_of(name: str, provider: str, placement, port: int, instance_id: str = "") -> dict:
    """The instance as a diff side: name, provider, the placement fields that are set, port."""
    side = {"name": name, "provider": provider}
    if instance_id:
        side["id"] = instance_id
    side["placement"] = {k: v for k, v in dataclasses.asdict(placement).items() if v}
    side["port"] = port
    return side


def appeared(side: dict) -> dict:
    return {"before": {}, "after": side, "after_header": "%s (%s)" % (side["name"], side["provider"])}


def disappeared(side: dict) -> dict:
    return {"before": side, "after": {}, "before_header": "%s (%s)" % (side["name"], side["provider"])}


def credentials_changed(side: dict) -> dict:
    """An existing instance whose credentials were set in place (added or rotated): the same
    instance on both sides, ``auth`` saying what changed (never a credential)."""
    header = "%s (%s)" % (side["name"], side["provider"])
    return {
        "before": dict(side, auth="other credentials, or none"),
        "after": dict(side, auth="the credentials asked for"),
        "before_header": header,
        "after_header": header,
    }


def listed_side(entry: dict) -> dict:
    """A listed instance (``as_dict``) as a diff side: what a list reads back of it (a list
    does not read placement or port)."""
    return {k: entry[k] for k in ("name", "provider", "id", "uid", "created_at") if entry.get(k)}
