# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Argument specs shared by every module; kept in step with plugins/doc_fragments/providers.py."""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import placement

PROVIDERS_ARGS = {
    "providers_file": {"type": "path"},
    "providers": {"type": "list", "elements": "dict"},
    "installation": {"type": "str"},
    "timeout": {"type": "float", "default": 120.0},
    "concurrency": {"type": "int", "default": 16},
}

PROVIDERS_MUTUALLY_EXCLUSIVE = [("providers_file", "providers")]

PLACEMENT_OPTIONS = {field: {"type": "str"} for field in placement.FIELDS}

# Basic-auth credentials of one proxy (helpers/proxy_auth.py validates them): the password is no_log, so
# Ansible masks it in every result, and it is never returned nor logged by the collection.
AUTH_OPTIONS = {
    "username": {"type": "str", "required": True},
    "password": {"type": "str", "required": True, "no_log": True},
}

STATE_PRESENT = "present"
STATE_ABSENT = "absent"

# The per-instance fields of proxy_instance: accepted at the top level (a single instance, or
# defaults for every batch item) and inside each ``instances`` item. No defaults here, so an
# item can tell "not given" (inherit the top-level value) from an explicit value.
INSTANCE_OPTIONS = {
    "provider": {"type": "str"},
    "uid": {"type": "str"},
    "name": {"type": "str"},
    "id": {"type": "str"},
    "namespace": {"type": "str"},
    "proxy_name": {"type": "str"},
    "placement": {"type": "dict", "options": PLACEMENT_OPTIONS},
    "cloud_init": {"type": "str", "no_log": True},
    "port": {"type": "int"},
    "state": {"type": "str", "choices": [STATE_PRESENT, STATE_ABSENT]},
    "wait": {"type": "bool"},
    "wait_timeout": {"type": "float"},
    "force": {"type": "bool"},
    "owner_reference": {"type": "bool"},
    "auth": {"type": "dict", "options": AUTH_OPTIONS},
}

INSTANCE_DEFAULTS = {
    "port": 3128,
    "state": STATE_PRESENT,
    "wait": False,
    "wait_timeout": 300.0,
    "force": False,
    "owner_reference": False,
}

# proxy_pool: the pool, its spread, and the instance template (a subset of INSTANCE_OPTIONS:
# name, uid and id follow from the pool and the slot). runners/pool_params.py validates them.
SPREAD_OPTIONS = {
    "name": {"type": "str"},
    "provider": {"type": "str", "required": True},
    "placement": {"type": "dict", "options": PLACEMENT_OPTIONS},
    "weight": {"type": "int", "default": 1},
    "max": {"type": "int"},
}

POOL_OPTIONS = {
    "pool": {"type": "str", "required": True},
    "count": {"type": "int"},
    "state": {"type": "str", "choices": [STATE_PRESENT, STATE_ABSENT], "default": STATE_PRESENT},
    "provider": {"type": "str"},
    "spread": {"type": "list", "elements": "dict", "options": SPREAD_OPTIONS},
    **{
        k: INSTANCE_OPTIONS[k]
        for k in ("placement", "cloud_init", "port", "auth", "namespace", "wait", "wait_timeout")
    },
}
