"""Issue 37's messages, through real ansible-playbook runs: each names what the user knows (the
release, the variable, the host)."""

from __future__ import annotations

import pytest

from .playbook import run_playbook

pytestmark = pytest.mark.playbook


def test_the_removed_kube_apply_names_the_release_that_removed_it(tmp_path):
    run = run_playbook(tmp_path, [{"crawl.egress_proxies.kube_apply": {}}], json_output=False)
    output = run.stdout + run.stderr
    assert run.rc != 0
    assert "kube_apply" in output and "version 0.2.0" in output, output[-2000:]
    assert "after 2026-12-01" not in output
