"""Every key a module really returns is documented in its RETURN, with a sample for each list and
dict: a run of each module on the local provider (real Squid) through ``ansible-playbook``,
covering the single and batch forms, check mode, failures, listing, health and garbage
collection, and every key path of every result (``instance.id``, ``results[].error_class``, ...)
looked up in RETURN's ``contains`` tree. The values of the enumerated keys (``state``,
``reason``, ``error_class``) must be named in their description too, so a state such as check
mode's ``deleting`` cannot go unmentioned.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
import yaml

from .playbook import ansible_environ, run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

MODULES = ("proxy_instance", "proxy_info", "proxy_gc", "proxy_check", "proxy_pool")
# What Ansible itself adds to a result (or every module may return), documented by Ansible.
STANDARD = {"changed", "failed", "msg", "exception", "invocation", "warnings", "deprecations", "diff"}
ENUMERATED = ("state", "reason", "error_class")
PI, INFO, GC, CHECK, POOL = ("crawl.egress_proxies." + m for m in MODULES)
ANSIBLE_DOC = os.path.join(os.path.dirname(sys.executable), "ansible-doc")


def return_doc(module: str) -> dict:
    """RETURN as ansible-doc reads it (the installed collection's view, fragments merged)."""
    name = "crawl.egress_proxies." + module
    proc = subprocess.run(
        [ANSIBLE_DOC, "--json", name], capture_output=True, text=True, env=ansible_environ(), check=True
    )
    return json.loads(proc.stdout)[name]["return"]


def documented(doc: dict, prefix: str = "") -> dict:
    """{key path: its RETURN entry}; a list's elements are ``path[]``."""
    out = {}
    for key, entry in doc.items():
        path = prefix + key
        out[path] = entry
        inner = path + ("[]." if entry.get("type") == "list" else ".")
        out.update(documented(entry.get("contains") or {}, inner))
    return out


def collect(value, prefix: str, out: dict) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not prefix and (key in STANDARD or key.startswith("_ansible")):
                continue
            path = prefix + ("." if prefix and not prefix.endswith("[]") else "") + key
            path = path.replace("[]" + key, "[]." + key) if prefix.endswith("[]") else path
            out.setdefault(path, []).append(item)
            collect(item, path, out)
    elif isinstance(value, list):
        for item in value:
            collect(item, prefix + "[]", out)


def scenario(tmp_path, local) -> dict:
    """{module: [results]} of one playbook that exercises every documented outcome."""
    u1, u2, u3, u4 = (str(uuid.uuid4()) for _n in range(4))
    tasks = [
        {"name": "create", PI: {"provider": "local", "uid": u1, "wait": True, "wait_timeout": 30}},
        {"name": "create check", PI: {"provider": "local", "uid": u4}, "check_mode": True},
        {
            "name": "batch",
            PI: {"provider": "local", "instances": [{"uid": u2}, {"uid": u3}], "wait": True},
        },
        {
            "name": "batch with a bad item",
            PI: {"provider": "local", "invalid_items": "fail_item", "instances": [{"uid": u1}, {"uid": " "}]},
            "ignore_errors": True,
        },
        {"name": "bad uid", PI: {"provider": "local", "uid": " bad"}, "ignore_errors": True},
        {"name": "unknown provider", PI: {"provider": "nowhere", "uid": u1}, "ignore_errors": True},
        {"name": "delete check", PI: {"provider": "local", "uid": u1, "state": "absent"}, "check_mode": True},
        {"name": "info", INFO: {"provider": "local"}},
        {"name": "info all", INFO: {}},
        {"name": "info ids", INFO: {"provider": "local", "ids": ["local/proxy-none"]}},
        {"name": "check", CHECK: {}},
        {"name": "gc check", GC: {"live_uids": [u1], "min_age": "0s"}, "check_mode": True},
        {"name": "gc young", GC: {"live_uids": [u1], "min_age": "1h"}},
        {"name": "gc", GC: {"live_uids": [u1], "min_age": "0s"}},
        {"name": "delete", PI: {"provider": "local", "uid": u1, "state": "absent"}},
        {"name": "delete batch", PI: {"provider": "local", "state": "absent", "instances": [{"uid": u1}]}},
        {"name": "pool check", POOL: {"pool": "rd", "provider": "local", "count": 2}, "check_mode": True},
        {"name": "pool", POOL: {"pool": "rd", "provider": "local", "count": 2, "wait": True}},
        {"name": "pool down", POOL: {"pool": "rd", "provider": "local", "count": 1}},
        {"name": "pool absent", POOL: {"pool": "rd", "provider": "local", "state": "absent"}},
    ]
    bad = [{"name": "bad", "type": "local", "local": {"bogus": 1}}]
    tasks += [
        {"name": "%s bad providers" % m, m: {"providers": bad}, "ignore_errors": True} for m in (INFO, CHECK)
    ]
    run = run_playbook(tmp_path, tasks, module_defaults=local, verbosity=3)
    assert run.rc == 0, run.stdout[-3000:]
    by_module: dict = {m: [] for m in MODULES}
    for task in tasks:
        module = next(k for k in task if k.startswith("crawl."))
        by_module[module.split(".")[-1]].append(run[task["name"]])
    return by_module


def test_every_returned_key_is_documented(tmp_path, local):
    results = scenario(tmp_path, local)
    missing, unnamed, unsampled = [], [], []
    for module in MODULES:
        doc = documented(return_doc(module))
        seen: dict = {}
        for result in results[module]:
            collect(result, "", seen)
        assert seen, module
        for path, values in sorted(seen.items()):
            if path not in doc:
                missing.append("%s: %s" % (module, path))
                continue
            if path.split(".")[-1] in ENUMERATED:
                text = yaml.safe_dump(doc[path].get("description"))
                for value in {v for v in values if isinstance(v, str) and v}:
                    if value not in text:
                        unnamed.append("%s: %s=%s" % (module, path, value))
        for path, entry in doc.items():
            if entry.get("type") in ("list", "dict") and "sample" not in entry:
                unsampled.append("%s: %s" % (module, path))
    assert missing == [], "returned but not in RETURN:\n" + "\n".join(missing)
    assert unnamed == [], "values not named in their RETURN description:\n" + "\n".join(unnamed)
    assert unsampled == [], "lists and dicts without a sample:\n" + "\n".join(unsampled)
