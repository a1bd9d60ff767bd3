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
refused before the file is opened, naming the directory (helpers/path_trust.py, the rule every
path root uses follows). A FIFO, a device or a file over the size limit is refused as Permanent
too, without blocking (helpers/bounded_file.py, the reader the controller uses as well).
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import bounded_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.path_trust import unsafe_reason

__all__ = ["FILE_KEYS", "CredentialsUnavailable", "CredentialsUnsafe", "require_readable", "unsafe_reason"]

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


def require_readable(path: str, what: str) -> None:
    """Raise ``CredentialsUnavailable`` unless ``path`` can be opened and read, and
    ``CredentialsUnsafe`` (before opening it) when another user could redirect it."""
    reason = unsafe_reason(path)
    if reason:
        raise CredentialsUnsafe("%s %s is refused: %s" % (what, path, reason))
    try:
        bounded_file.read_bytes(path, what)
    except bounded_file.FileProblem as exc:
        if exc.unreadable:
            raise CredentialsUnavailable("%s %s cannot be read: %s" % (what, path, exc.unreadable)) from None
        raise CredentialsUnsafe("%s %s is refused: %s" % (what, path, exc)) from None
