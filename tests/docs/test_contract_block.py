"""docs/contract.md's recipe for a new provider's conformance tests, taken from the Markdown
(issue 37) and run by pytest as a test file of its own: the block is written, unchanged, to a
scratch ``test_mytype.py``, with ``MyBackend``, the harness a new provider writes, bound to the
local provider's (``contract.local_backend.LocalBackend``, real Squid). Every rule of the suite
must pass, as it does for the local provider in tests/contract/test_local.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from contract.suite import ContractSuite

from .markdown_blocks import ROOT, blocks

pytestmark = [pytest.mark.squid]
BINDING = (
    "from contract.local_backend import LocalBackend as MyBackend  # the doc's harness, bound by the test\n"
)


def test_the_documented_contract_test_file_runs_the_suite(tmp_path):
    (block,) = [b for b in blocks("docs/contract.md") if "class TestMyTypeContract(ContractSuite)" in b.text]
    path = tmp_path / "test_mytype.py"
    path.write_text(BINDING + block.text)
    environ = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "tests"), os.path.join(ROOT, ".venv", "collections")]),
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rA",
            "--rootdir",
            str(tmp_path),
            str(path),
        ],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    passed = set(re.findall(r"^PASSED \S+::TestMyTypeContract::(test_\w+)", proc.stdout, re.M))
    rules = {name for name in dir(ContractSuite) if name.startswith("test_")}
    assert rules and passed == rules, sorted(rules - passed)
    assert not re.search(r"\d+ (skipped|xfailed|failed|error)", proc.stdout), proc.stdout[-2000:]
