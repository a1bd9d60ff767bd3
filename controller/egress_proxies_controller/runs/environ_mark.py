"""Writing a run's mark into this process's own environment block, as ``/proc`` shows it.

process_tree finds a run's processes by ``EGRESS_PROXIES_RUN=<run id>`` in
``/proc/<pid>/environ``, which is the block of memory the environment was in when the process
was exec'd: changing ``os.environ`` does not change it, and a process forked from the fork server
(and every worker it forks in turn) would show the server's. So the server is started with a
placeholder of a run id's length, and each forked run overwrites the placeholder's bytes in
place (as setproctitle does with argv); processes exec'd later carry ``os.environ`` as usual.
"""

from __future__ import annotations

import ctypes

PLACEHOLDER = "-" * 32  # a uuid4().hex run id: never equal to one


def _block() -> tuple:
    """The start address and the bytes of this process's environment block."""
    with open("/proc/self/stat") as handle:
        fields = handle.read().rpartition(")")[2].split()
    env_start = int(fields[47])  # field 50 of proc(5): env_start (fields after the comm)
    with open("/proc/self/environ", "rb") as handle:
        return env_start, handle.read()


def placeholder_offset(name: str) -> int:
    """Where the placeholder value of ``name`` starts in the block, or -1 when it is not there."""
    return _find(name, _block()[1])


def _find(name: str, block: bytes) -> int:
    needle = ("%s=%s" % (name, PLACEHOLDER)).encode()
    offset = (b"\0" + block).find(b"\0" + needle + b"\0")
    return -1 if offset < 0 else offset + len(name) + 1


def write(name: str, value: str) -> None:
    """Overwrite ``name``'s placeholder value with ``value`` (same length) in the block."""
    if len(value) != len(PLACEHOLDER):
        raise ValueError("a mark must be %d characters, not %d" % (len(PLACEHOLDER), len(value)))
    start, block = _block()  # one read of /proc for both the address and the offset
    offset = _find(name, block)
    if offset < 0:
        raise LookupError("no %s placeholder in this process's environment block" % name)
    ctypes.memmove(start + offset, value.encode(), len(value))
