"""Hostile files and paths (issue 40), and a way to read them that cannot hang or exhaust the
test process: each reading runs in a forked child with an address-space cap and a deadline, so
a reader that blocks on a FIFO or reads ``/dev/zero`` until memory runs out fails the test
instead of taking the machine with it."""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import time

NOBODY = 65534
SENTINEL = "tok3n5ent1nel" + "8f2c" * 8  # as long as a real token: never named as a field
MIB = 1024 * 1024


# A kubeconfig whose token is written as an alias: PyYAML names the alias in its message.
KUBECONFIG_ALIAS = "apiVersion: v1\nusers:\n  - name: u\n    user: {token: *%s}\n" % SENTINEL


def leaks(text: str) -> bool:
    """Whether ``text`` holds any 8 characters of the token in a row: PyYAML's snippet shows a
    window of about 36 characters before the error, so a long token leaks in part."""
    return any(SENTINEL[i : i + 8] in text for i in range(len(SENTINEL) - 7))


def _vm_size() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def bounded(fn, timeout: float = 10.0, memory: int = 256 * MIB):
    """``fn()``'s JSON-able result, computed in a child limited to ``memory`` bytes more than it
    starts with and ``timeout`` seconds; an exception in the child comes back as
    ``{"raised": "Type: message"}``; a hang or a crash fails with AssertionError."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            limit = _vm_size() + memory
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            payload = json.dumps({"result": fn()})
        except BaseException as exc:  # everything goes back to the parent
            payload = json.dumps({"raised": "%s: %s" % (type(exc).__name__, exc)})
        os.write(write_end, payload.encode())
        os._exit(0)
    os.close(write_end)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            ready = select.select([read_end], [], [], max(0.0, left))[0]
            if not ready:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError("the reader did not finish within %.0f s (it blocked)" % timeout)
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        status = os.waitpid(pid, 0)[1]
    if not chunks:
        raise AssertionError("the reader died (status %d): out of memory or a crash" % status)
    answer = json.loads(b"".join(chunks))
    return answer.get("result", answer)


def alias_bomb() -> bytes:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        previous = "*a%d" % (level - 1)
        lines.append("a%d: &a%d [%s]" % (level, level, ", ".join([previous] * 10)))
    return ("\n".join(lines) + "\nproviders: []\n").encode()


def _write(where, data: bytes) -> str:
    path = where / "providers.yaml"
    path.write_bytes(data)
    return str(path)


def _fifo(where) -> str:
    path = where / "providers.yaml"
    os.mkfifo(path)
    return str(path)


def _device(where) -> str:
    path = where / "providers.yaml"
    path.symlink_to("/dev/zero")
    return str(path)


def _in_dir(where, prepare) -> str:
    directory = where / "shared"
    directory.mkdir()
    path = _write(directory, b"providers: []\n")
    prepare(directory)
    return path


# name -> (make the file under a directory and return its path, words every refusal holds)
HOSTILE = {
    "FIFO": (_fifo, "not a regular file (it is a FIFO)"),
    # a providers file names what root runs: the ownership rule already refuses the device
    # (every user may write /dev/zero) before the reader would see it is no regular file
    "device": (_device, "/dev/zero is writable by every user"),
    "over 1 MiB": (lambda w: _write(w, b"providers: []\n" + b"#" * MIB + b"\n"), "larger than"),
    "non-UTF-8": (lambda w: _write(w, b"providers: []\n# caf\xe9\n"), "not UTF-8: byte 0xe9 at line 2"),
    "duplicate keys": (lambda w: _write(w, b"providers: []\nproviders: []\n"), "duplicate key"),
    "alias bomb": (lambda w: _write(w, alias_bomb()), "expands to more than"),
    "deep nesting": (lambda w: _write(w, b"providers: " + b"[" * 100 + b"]" * 100 + b"\n"), "nested deeper"),
    "YAML error with a token": (
        lambda w: _write(
            w,
            (
                "providers:\n  - name: k\n    type: kubernetes\n    kubernetes:\n"
                "      apiKey: %s x: y\n" % SENTINEL
            ).encode(),
        ),
        "not valid YAML: mapping values are not allowed here (line 5",
    ),
    "undefined alias named like a token": (
        lambda w: _write(w, ("providers:\n  - name: *%s\n" % SENTINEL).encode()),
        "not valid YAML: found undefined alias (line 2",
    ),
    "tag named like a token": (
        lambda w: _write(w, ("providers: !%s []\n" % SENTINEL).encode()),
        "not valid YAML: could not determine a constructor for the tag (line 1",
    ),
    "duplicate key that is a token": (
        lambda w: _write(w, ("providers: []\n%s: 1\n%s: 2\n" % (SENTINEL, SENTINEL)).encode()),
        "duplicate key (not shown) at line 3",
    ),
    "a directory owned by nobody": (
        lambda w: _in_dir(w, lambda d: os.chown(d, NOBODY, NOBODY)),
        "belongs to uid 65534",
    ),
    "a world-writable directory without the sticky bit": (
        lambda w: _in_dir(w, lambda d: d.chmod(0o777)),
        "writable by every user",
    ),
    "a file owned by nobody": (
        lambda w: _in_dir(w, lambda d: os.chown(d / "providers.yaml", NOBODY, NOBODY)),
        "belongs to uid 65534",
    ),
}

# The hostile credential files (made as above) and the words both sides refuse them with.
HOSTILE_CREDENTIALS = {
    "FIFO": "not a regular file (it is a FIFO)",
    "device": "not a regular file (it is a character device)",
    "over 1 MiB": "larger than",
}
