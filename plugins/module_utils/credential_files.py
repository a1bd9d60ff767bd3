# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The one rule for every provider's credential files (gcp ``credentialsFile``, kubernetes
``kubeconfig``, ``caCert``, ``clientCert`` and ``clientKey``, libvirt ``sshKeyFile`` and ``knownHostsFile``).

A file that is missing or unreadable when a call needs it is **Transient**: in a cluster it is
a Secret that may still be mounting or is being rotated, and a Permanent answer would latch the
controller on every Proxy of that provider until someone edited each spec. A file that can be
read but holds no valid credentials is **Permanent**: only an admin fixes it. The message names
the file, never its content.
"""

from __future__ import annotations

# The config keys that name a credential file, in every provider's block. The controller watches
# these files (a rotation releases latched Proxies) and keeps its own copy of this set.
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


def require_readable(path: str, what: str) -> None:
    """Raise ``CredentialsUnavailable`` unless ``path`` can be opened and read."""
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise CredentialsUnavailable("%s %s cannot be read: %s" % (what, path, exc.strerror or exc)) from None
