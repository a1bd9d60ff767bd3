"""One module run as ansible-core runs it, in a process of its own: its arguments from a file
(``ANSIBLE_MODULE_ARGS``), the collection from the venv's collections path, its JSON answer read
back. Shared by the unit tests that need the module's real ``main()`` and exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".venv", "collections")


def run_module(tmp_path, module: str, args: dict, timeout: float = 120) -> dict:
    """``module`` (a dotted name) run with ``args``; its answer as a dict."""
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    program = "import runpy;runpy.run_module(%r, run_name='__main__')" % module
    done = subprocess.run(
        [sys.executable, "-c", program, str(path)],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=COLLECTIONS),
        cwd=str(tmp_path),
        timeout=timeout,
        check=False,
    )
    return json.loads(done.stdout)
