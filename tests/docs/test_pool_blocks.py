"""docs/pools.md's examples that need no cluster, taken from the Markdown (issue 37).

The crawler's Python runs for real: its ``PROXY_LIST`` file is what the controller publishes for
a pool (``pool.publish.render``) whose one Ready member is a real Squid of the local provider,
``session`` is a ``requests.Session`` (the crawler's HTTP client), and a request then goes
through that Squid (its ``X-Cache`` header names the instance). The ``proxy_pool`` task, whose
``lab`` target is libvirt (its marker says so), is checked by ``ansible-playbook --syntax-check``
in a one-play playbook and its arguments against the module's own argument spec.
"""

from __future__ import annotations

import dataclasses
import os
import random
import time
import uuid

import pytest
import requests
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from contract import local_fixtures
from contract.suite import cleanup, dl, wait_for_state
from egress_proxies_controller.pool import publish
from egress_proxies_controller.pool.model import Member

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import POOL_OPTIONS
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.proxy_module import (
    PROVIDERS_ARGS,
)

from . import classify
from .markdown_blocks import ROOT, blocks

backend, origin = local_fixtures.backend, local_fixtures.origin  # the shared fixtures
MODULE = "crawl.egress_proxies.proxy_pool"


def _one(needle: str):
    (block,) = [b for b in blocks("docs/pools.md") if needle in b.text]
    return block


@pytest.mark.squid
def test_crawler_reads_the_published_list_and_goes_through_a_member(backend, origin, tmp_path, monkeypatch):
    block = _one('os.environ["PROXY_LIST"]')
    req = backend.request(str(uuid.uuid4()))
    with cleanup(backend) as ids:
        provider_id = backend.provider.create(req, dl(backend))
        ids.append(provider_id)
        running = wait_for_state(backend, provider_id, (contract.RUNNING,))[-1]
        member = Member("crawl-0", "default", "r1", time.time(), True, ip=running.ip, port=req.port)
        listing = tmp_path / "proxies.txt"
        listing.write_text(publish.render([member], None, time.time())["proxies.txt"])
        monkeypatch.setenv("PROXY_LIST", str(listing))
        for name in ("NO_PROXY", "no_proxy"):  # the crawler's environment must not bypass the proxy
            monkeypatch.delenv(name, raising=False)
        session = requests.Session()
        scope = {"os": os, "random": random, "session": session}
        exec(compile(block.text, block.where, "exec"), scope)  # as the crawler runs it
        assert scope["proxies"] == ["http://%s:%d" % (running.ip, req.port)]
        response = session.get("http://%s:%d/crawled" % tuple(origin), timeout=10)
        assert (response.status_code, response.text) == (200, "hello /crawled")
        # Squid names itself (the instance) in X-Cache: the answer came through the member.
        assert response.headers.get("X-Cache", "").endswith("from " + running.name), dict(response.headers)


def test_proxy_pool_task_passes_the_syntax_check_and_the_argument_spec():
    block = _one(MODULE + ":")
    tasks = yaml.safe_load(block.text)
    play = dataclasses.replace(
        block, text=yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": tasks}])
    )
    problem = classify.check(play, "playbook", os.path.join(ROOT, ".venv", "collections"))
    assert not problem, problem
    validator = ArgumentSpecValidator(
        dict(PROVIDERS_ARGS, **POOL_OPTIONS), mutually_exclusive=[("provider", "spread")]
    )
    (task,) = tasks
    assert validator.validate(task[MODULE]).error_messages == []
    broken = dict(task[MODULE], provider="local-a")  # provider and spread together
    assert validator.validate(broken).error_messages, "the argument spec check refuses nothing"
