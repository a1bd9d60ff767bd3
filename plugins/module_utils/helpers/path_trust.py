# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The one ownership rule: a path root executes, reads configuration or credentials from, or
writes under must not be one another user can change.

The modules and the controller usually run as root. A user who owns a directory on the path
(or can write it: world-writable without the sticky bit protecting a trusted entry, or
group-writable for a group that is not root's or ours) could swap the entry for their own file
or a link; one who owns or can write the file itself simply edits it. Root would then run their
code (``squidBinary``, the fork server's stand-in ``ansible-playbook``), obey their
configuration (the providers file names both) or write where they point (``stateDir``, the work
directory): ``root_unsafe_reason`` judges those, when this process is root. ``unsafe_reason``
alone judges credential files for every user (issue 28). Trusted are root and this process's
user. Both the path as written and as resolved are walked, so a link is judged by where it
leads too. Missing parts are not judged (a directory created on first use is created by us);
the caller reports a missing file itself.
"""

from __future__ import annotations

import os
import stat


def _chains(path: str) -> list:
    """The path as written and as resolved: an entry of either could be swapped."""
    chains = []
    for chain in (os.path.abspath(path), os.path.realpath(path)):
        if chain not in chains:
            chains.append(chain)
    return chains


def others_may_write(info: os.stat_result) -> str:
    """Who besides the trusted users may write the file or directory ``info`` describes."""
    if info.st_mode & 0o002:
        return "every user"
    if info.st_mode & 0o020 and info.st_gid not in (0, os.getegid()):
        return "group %d" % info.st_gid
    return ""


def unsafe_reason(path: str, entry_too: bool = False) -> str:
    """Why another user could change where ``path`` leads (or, with ``entry_too``, what the
    entry itself holds), or ``""``."""
    trusted = {0, os.geteuid()}
    for chain in _chains(path):
        directory = os.sep
        parts = [p for p in chain.split(os.sep) if p]
        for part in parts:
            entry = os.path.join(directory, part)
            try:
                holder, info = os.stat(directory), os.lstat(entry)
            except OSError:
                return ""
            if holder.st_uid not in trusted:
                return "%s belongs to uid %d, who could replace %s" % (directory, holder.st_uid, part)
            writer = others_may_write(holder)
            sticky_and_ours = holder.st_mode & stat.S_ISVTX and info.st_uid in trusted
            if writer and not sticky_and_ours:
                return "%s is writable by %s, who could replace %s" % (directory, writer, part)
            directory = entry
    if entry_too:  # what the path leads to, named as resolved (a link names its target)
        target = os.path.realpath(path)
        try:
            info = os.stat(target)
        except OSError:
            return ""
        if info.st_uid not in trusted:
            return "%s belongs to uid %d" % (target, info.st_uid)
        writer = others_may_write(info)
        if writer:
            return "%s is writable by %s" % (target, writer)
    return ""


def root_unsafe_reason(path: str, entry_too: bool = True) -> str:
    """The rule for what root runs, reads configuration from or writes under: ``unsafe_reason``
    when this process is root, else ``""``. A process of another user runs nothing as root, and
    the shipped Pod runs as one user alone on volumes Kubernetes makes 0777 (an emptyDir), where
    "every user" is that user."""
    return unsafe_reason(path, entry_too) if os.geteuid() == 0 else ""


def root_create_reason(directory: str) -> str:
    """Why root must not create an entry in ``directory`` (a ``stateDir`` made on first use), or
    ``""``: the rule for the directory and those above it, where a world-writable directory is
    fine when sticky (``/tmp``), since the entry root creates is root's."""
    if os.geteuid() != 0:
        return ""
    reason = unsafe_reason(directory)
    if reason:
        return reason
    try:
        info = os.stat(directory)
    except OSError:
        return ""
    if info.st_uid not in (0, os.geteuid()):
        return "%s belongs to uid %d" % (directory, info.st_uid)
    writer = others_may_write(info)
    if writer and not info.st_mode & stat.S_ISVTX:
        return "%s is writable by %s" % (directory, writer)
    return ""
