"""A bench's working directory, removed when the bench ends; ``BENCH_KEEP=1`` keeps it.

Why: a burst leaves the test control plane's etcd data, each controller's log and
ansible-runner's artifacts behind, 600 to 850 MiB a run, and a few runs a day filled /tmp by
gigabytes. The logs are worth reading after a surprising figure (which runs a burst made, when
they started), so ``BENCH_KEEP=1`` keeps the directory and says where it is.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

KEEP_ENV = "BENCH_KEEP"


def make(prefix: str) -> str:
    """A new directory under the system's temporary one, removed at the bench's exit (after its
    ``finally`` blocks have stopped what ran in it) unless ``BENCH_KEEP=1``."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(_leave, path)
    return path


def _leave(path: str) -> None:
    if os.environ.get(KEEP_ENV) == "1":
        print("working directory kept (%s=1): %s" % (KEEP_ENV, path), file=sys.stderr)
        return
    shutil.rmtree(path, ignore_errors=True)
