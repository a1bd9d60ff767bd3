# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""A per-provider rate limit for provider calls, shared by every process on the host.

A burst of thousands of creates comes from many module processes at once (the controller's runs
in flight, AWX forks, a playbook's batch workers), and a backend's API quota counts all of them.
So the bucket lives in a small file, not in memory: each call takes a token under an exclusive
``flock`` (never held while waiting), and a call that cannot have one before its own deadline
fails ``transient`` without calling the backend (the caller retries later; nothing changed).

Configured per provider in the providers file::

    - name: gcp-eu
      type: gcp
      rateLimit: {callsPerSecond: 10, burst: 20}

One token is one provider contract call (create, get, delete, list, check), whatever number of
HTTP requests it makes. The files live in ``EGRESS_PROXIES_RATE_LIMIT_DIR`` (default: a 0700
directory ``egress-proxies-rate-limit-<uid>`` in the system's temp directory), one per
installation and provider, so every process of one installation on one host shares a bucket.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import hashlib
import os
import stat
import struct
import tempfile
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors

ENV_DIR = "EGRESS_PROXIES_RATE_LIMIT_DIR"
KEYS = ("callsPerSecond", "burst")
MAX_RATE = 100000.0
MAX_BURST = 100000
_STATE = struct.Struct("<dd")  # tokens, at (CLOCK_MONOTONIC seconds: one clock for the host)


@dataclasses.dataclass(frozen=True)
class RateLimit:
    calls_per_second: float
    burst: int


def parse(raw, where: str, problems: list) -> RateLimit | None:
    """The ``rateLimit`` block of a provider entry; problems are appended with their path."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append("%s: must be a mapping with callsPerSecond and burst" % where)
        return None
    for key in sorted(set(raw) - set(KEYS), key=str):
        problems.append("%s.%s: unknown field (allowed: %s)" % (where, str(key)[:40], ", ".join(KEYS)))
    rate, burst = raw.get("callsPerSecond"), raw.get("burst", None)
    ok = not (set(raw) - set(KEYS))
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= MAX_RATE:
        problems.append("%s.callsPerSecond: required, a number above 0 and at most %d" % (where, MAX_RATE))
        ok = False
    if burst is None:
        burst = max(1, int(rate)) if ok else 1
    elif isinstance(burst, bool) or not isinstance(burst, int) or not 1 <= burst <= MAX_BURST:
        problems.append(
            "%s.burst: an integer from 1 to %d (default: callsPerSecond, at least 1)" % (where, MAX_BURST)
        )
        ok = False
    return RateLimit(float(rate), int(burst)) if ok else None


def bucket_dir() -> str:
    """The shared directory, created 0700; refused when it is not ours (a planted directory or
    symlink would let another user read or starve our buckets)."""
    path = os.environ.get(ENV_DIR) or os.path.join(
        tempfile.gettempdir(), "egress-proxies-rate-limit-%d" % os.geteuid()
    )
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise OSError(errno.EPERM, "rate-limit directory %s is not a private directory of this user" % path)
    return path


class SharedTokenBucket:
    """A token bucket in a file: ``burst`` tokens, refilled at ``calls_per_second``."""

    def __init__(self, limit: RateLimit, installation: str, provider_name: str, directory: str | None = None):
        self.limit = limit
        self.provider_name = provider_name
        self.key = hashlib.sha256(("%s\0%s" % (installation, provider_name)).encode()).hexdigest()[:20]
        self.directory = directory
        self._path = os.path.join(directory, self.key) if directory else ""

    @property
    def path(self) -> str:
        """The bucket's file, its directory made on first use (not when the config is parsed)."""
        if not self._path:
            self._path = os.path.join(bucket_dir(), self.key)
        return self._path

    def acquire(self, op: str, deadline) -> float:
        """Take one token, waiting for it at most until ``deadline``; returns the seconds waited.
        Raises a ``transient`` ProviderError when no token comes in time (no backend call made)."""
        started = time.monotonic()
        while True:
            try:
                wait = self._take()
            except OSError as exc:
                # A directory that is not ours never heals by retrying: fix the host. Anything
                # else (a full disk) may.
                classify = errors.permanent if exc.errno == errno.EPERM else errors.transient
                raise classify(op, self.provider_name, "", "rate limit bucket: %s" % exc) from None
            if wait <= 0.0:
                return time.monotonic() - started
            left = deadline.remaining()
            if deadline.cancelled or (left is not None and left < wait):
                raise errors.transient(
                    op,
                    self.provider_name,
                    "",
                    "rate limit %.6g calls/s (burst %d) of provider %r: no call slot before the deadline; "
                    "nothing was sent to the backend"
                    % (self.limit.calls_per_second, self.limit.burst, self.provider_name),
                )
            time.sleep(min(wait, 1.0))

    def _take(self) -> float:
        """0 when a token was taken, else the seconds until one will be there."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            now = time.monotonic()
            data = os.pread(fd, _STATE.size, 0)
            tokens, at = _STATE.unpack(data) if len(data) == _STATE.size else (float(self.limit.burst), now)
            if at > now:  # a file from before a reboot (another monotonic epoch): start full
                tokens, at = float(self.limit.burst), now
            tokens = min(float(self.limit.burst), tokens + (now - at) * self.limit.calls_per_second)
            if tokens >= 1.0:
                os.pwrite(fd, _STATE.pack(tokens - 1.0, now), 0)
                return 0.0
            os.pwrite(fd, _STATE.pack(tokens, now), 0)
            return (1.0 - tokens) / self.limit.calls_per_second
        finally:
            os.close(fd)  # releases the lock
