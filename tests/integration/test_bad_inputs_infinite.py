"""Every int option of every module, given an infinity (``"inf"``, ``"Infinity"``, YAML's
``.inf``), through real module runs: refused ``permanent`` with a message naming the field and
changing nothing, where core's ``check_type_int`` used to die with an ``OverflowError``
traceback (issue 40 §6)."""

from __future__ import annotations

import pytest

from .local_env import instance_dirs
from .playbook import run_playbook
from .test_bad_inputs_table import CHECK, GC, INFO, PI, _assert_none_wrong, _result, _wrong

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PP = "crawl.egress_proxies.proxy_pool"
INF = float("inf")
SHARDS = {"count": 2, "owned": [0]}

# (label, (module, args), field named in the message)
ROWS = [
    ("instance port", (PI, {"provider": "local", "uid": "u1", "port": "inf"}), "port"),
    ("instance port .inf", (PI, {"provider": "local", "uid": "u1", "port": INF}), "port"),
    (
        "instance concurrency",
        (PI, {"provider": "local", "uid": "u1", "concurrency": "Infinity"}),
        "concurrency",
    ),
    (
        "batch item port",
        (PI, {"provider": "local", "instances": [{"uid": "u1"}, {"uid": "u2", "port": "-inf"}]}),
        "instances[1].port",
    ),
    ("pool count", (PP, {"pool": "p", "provider": "local", "count": "inf"}), "count"),
    ("pool count .inf", (PP, {"pool": "p", "provider": "local", "count": INF}), "count"),
    ("pool port", (PP, {"pool": "p", "provider": "local", "count": 1, "port": "Infinity"}), "port"),
    (
        "spread weight",
        (PP, {"pool": "p", "count": 1, "spread": [{"provider": "local", "weight": "inf"}]}),
        "spread[0].weight",
    ),
    (
        "spread max",
        (PP, {"pool": "p", "count": 1, "spread": [{"provider": "local", "max": INF}]}),
        "spread[0].max",
    ),
    (
        "pool concurrency",
        (PP, {"pool": "p", "provider": "local", "count": 1, "concurrency": "inf"}),
        "concurrency",
    ),
    ("gc shard count", (GC, {"live_uids": [], "uid_shards": dict(SHARDS, count="inf")}), "uid_shards.count"),
    (
        "gc shard owned",
        (GC, {"live_uids": [], "uid_shards": dict(SHARDS, owned=[0, "inf"])}),
        "uid_shards.owned[1]",
    ),
    ("gc concurrency", (GC, {"live_uids": [], "concurrency": "Infinity"}), "concurrency"),
    ("info concurrency", (INFO, {"concurrency": "inf"}), "concurrency"),
    ("check concurrency", (CHECK, {"concurrency": INF}), "concurrency"),
]


@pytest.mark.parametrize("direct", ["true", "false"], ids=["direct", "ansiballz"])
def test_an_infinite_int_option_is_refused_naming_the_field(tmp_path, local, direct):
    """Both ways a module runs: in-process (plugins/action) and ansible-core's AnsiballZ."""
    tasks = [{"name": label, module: args, "ignore_errors": True} for label, (module, args), _f in ROWS]
    env = {"EGRESS_PROXIES_DIRECT_MODULES": direct}
    run = run_playbook(tmp_path, tasks, module_defaults=local, env=env)
    fragment = "%s: must be a whole number, not infinity"
    wrong = {label: _wrong(_result(run, label), fragment % field) for label, _call, field in ROWS}
    _assert_none_wrong(wrong)
    assert "Traceback" not in run.stdout + run.stderr
    assert "OverflowError" not in run.stdout + run.stderr
    assert instance_dirs(tmp_path / "state") == []
