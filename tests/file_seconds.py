"""Where a pytest session's time goes, by test file: the sum of each file's setup, call and
teardown durations, printed at the end of the run (the slowest files) and written to
``tests/output/file-seconds*.json``.

Why: ``make test`` must fit CI's limit (docs/testing.md, issue 27), and under pytest-xdist the
session's wall time is set by how the files fall on the workers; ``--durations`` names only the
slowest tests, not the files that the scheduler moves as units.
"""

from __future__ import annotations

import json
import os

SHOWN = 15
MAX_SUFFIX = 80  # a file name stays well under the file system's 255 bytes


class FileSeconds:
    def __init__(self):
        self.seconds: dict = {}

    def add(self, report) -> None:
        path = report.nodeid.split("::", 1)[0]
        self.seconds[path] = self.seconds.get(path, 0.0) + float(getattr(report, "duration", 0.0) or 0.0)

    def write(self, output_dir: str, selection: list) -> str:
        """``file-seconds.json`` for the whole suite, ``file-seconds-<what>.json`` for a session
        given paths (``make molecule`` and ``make faults`` run sessions of their own)."""
        os.makedirs(output_dir, exist_ok=True)
        named = [os.path.basename(a.split("::")[0].rstrip("/")).split(".")[0] for a in selection]
        suffix = "".join("-" + n for n in named if n and n != "tests")
        if len(suffix) > MAX_SUFFIX:  # many paths: one name for any such selection
            suffix = "-selection"
        path = os.path.join(output_dir, "file-seconds%s.json" % suffix)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump({k: round(v, 1) for k, v in sorted(self.seconds.items())}, handle, indent=1)
        return path

    def lines(self) -> list:
        slowest = sorted(self.seconds.items(), key=lambda kv: -kv[1])[:SHOWN]
        return ["%8.1fs  %s" % (seconds, path) for path, seconds in slowest]
