"""The work directory and the directories under it: ours, or refused at start.

Root runs what the work directory holds (the fork server's stand-in ``ansible-playbook``, each
run's project and env files) and writes under it (the private copies of the providers file). A
directory another user owns, or can write, on the way to any of those would let that user
replace a file root then executes (issue 40). ``--work-dir`` is created 0700 when missing; when
it exists it must belong to root or this process's user (it is then made 0700), and nothing below
it may be another user's or writable by one. Run as root, every directory above it must be one
nobody else can change too (helpers/path_trust.py, the modules' own rule). Run as another user,
the directories above are not judged: the shipped Pod runs as uid 65532 alone, and its work
directory lies on an emptyDir, which Kubernetes makes 0777. The directories made below it later
are checked when they are made.
"""

from __future__ import annotations

import os
import stat

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import path_trust


class UnsafeWorkDir(Exception):
    """A directory root would run or write files under is one another user can change."""


def prepare(path: str) -> None:
    """Create ``path`` (0700) if missing, refuse it unless it is ours under directories nobody
    else can change, and make it 0700. ``OSError`` when it cannot be created."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    # the directories above it, as written and resolved, where root is the one that runs its files
    reason = path_trust.root_unsafe_reason(path, entry_too=False)
    info = os.stat(path)
    if not reason and info.st_uid not in (0, os.geteuid()):
        reason = "%s belongs to uid %d" % (path, info.st_uid)
    if reason:
        raise UnsafeWorkDir("%s is refused: %s" % (path, reason))
    os.chmod(path, 0o700)  # ours: whatever it was, only we may enter it now
    foreign = _foreign_entry(path)  # left while it was open to others: the stand-in, a run's files
    if foreign:
        raise UnsafeWorkDir("%s is refused: %s" % (path, foreign))


def _foreign_entry(top: str) -> str:
    """The first entry below ``top`` another user owns or can write, described, or ``""``
    (links are judged by their owner, never followed)."""
    trusted = {0, os.geteuid()}
    for directory, subdirs, files in os.walk(top, onerror=None, followlinks=False):
        for name in subdirs + files:
            entry = os.path.join(directory, name)
            try:
                info = os.lstat(entry)
            except OSError:
                continue
            if info.st_uid not in trusted:
                return "%s belongs to uid %d" % (entry, info.st_uid)
            if not stat.S_ISLNK(info.st_mode) and path_trust.others_may_write(info):
                return "%s is writable by %s" % (entry, path_trust.others_may_write(info))
    return ""


def private_dir(path: str) -> str:
    """``path`` (below the work directory, which ``prepare`` judged) created 0700 if missing,
    refused when it is a link or another user owns or can write it; returns ``path``."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    reason = ""
    if not stat.S_ISDIR(info.st_mode):
        reason = "it is not a directory"
    elif info.st_uid not in (0, os.geteuid()):
        reason = "it belongs to uid %d" % info.st_uid
    elif path_trust.others_may_write(info):
        reason = "it is writable by %s" % path_trust.others_may_write(info)
    if reason:
        raise UnsafeWorkDir("%s is refused: %s" % (path, reason))
    return path
