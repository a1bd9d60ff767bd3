# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The one rule for every provider's credential files (gcp ``credentialsFile``, kubernetes
``kubeconfig``, ``caCert``, ``clientCert`` and ``clientKey``, libvirt ``sshKeyFile`` and ``knownHostsFile``).

A file that is missing or unreadable when a call needs it is **Transient**: in a cluster it is
a Secret that may still be mounting or is being rotated, and a Permanent answer would latch the
controller on every Proxy of that provider until someone edited each spec. A file that can be
read but holds no valid credentials is **Permanent**: only an admin fixes it. The message names
the file, never its content.

A file reached through a directory another user can change is **Permanent** too (issue 28):
the module often runs as root, and a user who can swap an entry on the path (a directory they
own, or a world-writable one such as ``/tmp`` where the entry is theirs) could point root's read
at another credential root holds, which the provider would then use as its own identity. It is
refused before the file is opened, naming the directory.
"""

from __future__ import annotations

import os
import stat

# The config keys that name a credential file, in every provider's block. The controller watches
# these files (a rotation releases latched Proxies) by this same tuple (credential_watch).
FILE_KEYS = (
    "credentialsFile",
    "kubeconfig",
    "caCert",
    "clientCert",
    "clientKey",
    "sshKeyFile",
    "knownHostsFile",
)


class CredentialsUnavailable(Exception):
    """A credential file cannot be read right now (classified Transient by every provider)."""


class CredentialsUnsafe(Exception):
    """A credential file's path crosses a directory another user can change (Permanent)."""


def _chains(path: str) -> list:
    """The path as written and as resolved: an entry of either could be swapped."""
    chains = []
    for chain in (os.path.abspath(path), os.path.realpath(path)):
        if chain not in chains:
            chains.append(chain)
    return chains


def unsafe_reason(path: str) -> str:
    """Why another user could change where ``path`` leads, or ``""``. Trusted are root and this
    process's user; a directory they do not own, or one every user may write (unless sticky and
    the entry is a trusted user's), lets someone else replace the entry. Missing parts are left
    to ``require_readable``."""
    trusted = {0, os.geteuid()}
    for chain in _chains(path):
        directory = os.sep
        for part in [p for p in chain.split(os.sep) if p]:
            entry = os.path.join(directory, part)
            try:
                holder, info = os.stat(directory), os.lstat(entry)
            except OSError:
                return ""
            if holder.st_uid not in trusted:
                return "%s belongs to uid %d, who could replace %s" % (directory, holder.st_uid, part)
            sticky_and_ours = holder.st_mode & stat.S_ISVTX and info.st_uid in trusted
            if holder.st_mode & 0o002 and not sticky_and_ours:
                return "%s is writable by every user, who could replace %s" % (directory, part)
            directory = entry
    return ""


def require_readable(path: str, what: str) -> None:
    """Raise ``CredentialsUnavailable`` unless ``path`` can be opened and read, and
    ``CredentialsUnsafe`` (before opening it) when another user could redirect it."""
    reason = unsafe_reason(path)
    if reason:
        raise CredentialsUnsafe("%s %s is refused: %s" % (what, path, reason))
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise CredentialsUnavailable("%s %s cannot be read: %s" % (what, path, exc.strerror or exc)) from None
