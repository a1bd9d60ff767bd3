"""Issue 28 §7's bad inputs, through real module runs: each fails ``permanent`` with a message
naming the field, before anything is touched (the rule and the checks of
``test_bad_inputs_table``)."""

from __future__ import annotations

import contextlib
import os
import threading

import pytest
from contract.local_backend import random_loopback_range

from .local_env import instance_dirs
from .playbook import run_playbook
from .test_bad_inputs_table import INFO, PI, _assert_none_wrong, _result, _wrong

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

PP = "crawl.egress_proxies.proxy_pool"


def _rows(tmp_path) -> list:
    small = [
        {
            "name": "small",
            "type": "local",
            "local": {
                "stateDir": str(tmp_path / "small"),
                "addressRange": random_loopback_range().replace("/24", "/28"),
            },
        }
    ]
    user = {"username": "#ops", "password": "pw-1"}
    return [
        (
            "username starts with #",
            (PI, {"provider": "local", "uid": "u1", "auth": user}),
            "auth.username: '#ops'",
        ),
        (
            "username not ASCII",
            (PI, {"provider": "local", "uid": "u1", "auth": {"username": "jürgen", "password": "pw-1"}}),
            "auth.username: 'jürgen' has characters outside ASCII",
        ),
        (
            "pool username #",
            (PP, {"pool": "p", "count": 1, "provider": "local", "auth": user}),
            "auth.username",
        ),
        (
            "spread element a string",
            (PP, {"pool": "p", "count": 1, "spread": ["local"]}),
            "spread[0]: must be a mapping",
        ),
        (
            "batch element a string",
            (PI, {"provider": "local", "instances": ["u1"]}),
            "instances[0]: must be a mapping",
        ),
        (
            "count past the address range",
            (PP, {"pool": "p", "count": 10000, "provider": "small", "providers": small}),
            "count: 10000 is more than the spread's providers can ever hold (14: small: addressRange",
        ),
        (
            "batch past the address range",
            (
                PI,
                {
                    "provider": "small",
                    "providers": small,
                    "instances": [{"uid": "u%d" % i} for i in range(15)],
                },
            ),
            "instances: 15 items with state=present on provider small, more than it can ever hold "
            "(14: addressRange",
        ),
    ]


def test_issue_28_bad_inputs_are_refused_naming_the_field(tmp_path, local):
    rows = _rows(tmp_path)
    tasks = [{"name": label, module: args, "ignore_errors": True} for label, (module, args), _f in rows]
    run = run_playbook(tmp_path, tasks, module_defaults=local)
    wrong = {label: _wrong(_result(run, label), fragment) for label, _call, fragment in rows}
    _assert_none_wrong(wrong)
    for label in ("count past the address range", "batch past the address range"):
        assert len(str(_result(run, label))) < 5000, "one bounded message, not one failure per member"
    assert instance_dirs(tmp_path / "state") == [] and instance_dirs(tmp_path / "small") == []


def test_a_providers_file_that_is_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "providers.yaml"
    os.mkfifo(fifo)
    done = threading.Event()

    def unblock():
        """A module that opened the FIFO waits for a writer: give it one (and EOF) after 40 s,
        so a run that hangs ends and leaves no process behind. Such a run then reads an empty
        file, whose message is not the one asserted below: no clock is needed to tell."""
        if done.wait(40):
            return
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    writer = threading.Thread(target=unblock)
    writer.start()
    try:
        run = run_playbook(
            tmp_path, [{"name": "fifo", INFO: {"providers_file": str(fifo)}, "ignore_errors": True}]
        )
    finally:
        done.set()
        writer.join()
    why = _wrong(_result(run, "fifo"), "providers file is not a regular file (it is a FIFO)")
    assert not why, why
    assert str(fifo) in run["fifo"]["msg"]
