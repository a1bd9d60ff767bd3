"""README.md's first command, ``make demo``, run as written, and its summary compared with the
output README shows (issue 37).

The demo uses its own fixed directory (/tmp/egress-proxies-demo) and loopback range
(127.77.0.0/16, which no other test uses); what differs from run to run (instance names,
addresses, Squid's version) is compared by shape, the rest word for word.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from .markdown_blocks import ROOT, blocks

pytestmark = [pytest.mark.squid, pytest.mark.playbook]
_VARYING = (
    (re.compile(r"proxy-[a-z2-7]{16}"), "proxy-ID"),
    (re.compile(r"\b127(\.\d+){3}\b"), "ADDRESS"),
    (re.compile(r"squid \d+(\.\d+)+"), "squid VERSION"),
)


def shape(line: str) -> str:
    for pattern, placeholder in _VARYING:
        line = pattern.sub(placeholder, line)
    return line.strip()


def _summary(stdout: str) -> list:
    """The Summary task's ``msg`` lines, from the default callback's output."""
    task = stdout[stdout.index("TASK [Summary]") :]
    start = task.index("{")
    return json.JSONDecoder().raw_decode(task[start:].split("=> ", 1)[-1])[0]["msg"]


def test_make_demo_prints_the_summary_readme_shows():
    (block,) = [b for b in blocks("README.md") if b.language == "sh" and b.text.startswith("make demo")]
    (shown,) = [b for b in blocks("README.md") if not b.language and b.text.startswith("created: proxy-")]
    commands = [line.partition("#")[0].strip() for line in block.text.splitlines() if line.strip()]
    assert commands == ["make demo"], commands
    proc = subprocess.run(
        commands[0], shell=True, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    printed = _summary(proc.stdout)
    assert [shape(line) for line in printed] == [shape(line) for line in shown.text.splitlines()], printed


def test_the_shape_keeps_what_must_match():
    """Two summaries differing only by ids, addresses and version match; a failure does not."""
    line = "gc dry run: would delete proxy-5kgvuzn52rzbbssc; kept proxy-es3b6djkjtios7uf (live)"
    assert shape(line) == shape(line.replace("5kgvuzn52rzbbssc", "aaaaaaaaaaaaaaaa"))
    assert shape("provider check: ready (squid 5.7)") == shape("provider check: ready (squid 6.13)")
    assert shape("provider check: ready (squid 5.7)") != shape("provider check: NOT ready (squid 5.7)")
    assert shape("listed: 2 instances (Running, Running)") != shape("listed: 1 instances (Running)")
