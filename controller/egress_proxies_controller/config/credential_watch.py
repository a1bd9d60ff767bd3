"""The credential files a provider's entry names, watched so a rotation counts as a change.

An admin fixes a provider's 401 or SSH authentication failure by rotating the Secret mounted at
the path the providers file names (gcp ``credentialsFile``, kubernetes ``kubeconfig``, libvirt
``sshKeyFile`` and ``knownHostsFile``), not by editing the file or any spec. The Proxies that
latched PermanentError on the old credentials must then be planned again, so the content of
those files is part of the provider's configuration. Only digests are kept, never content, and
a file is read again only when its stat changes (kubelet swaps a Secret's files by a symlink
rename, which gives the path a new inode).
"""

from __future__ import annotations

import hashlib
import os

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import bounded_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import FILE_KEYS

CREDENTIAL_FILE_KEYS = frozenset(FILE_KEYS)  # the keys the modules read credential files from


def credential_paths(entry) -> list:
    """Every credential file path ``entry`` names, at any depth (libvirt hosts may carry their own)."""
    found = []

    def walk(value) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                if key in CREDENTIAL_FILE_KEYS and isinstance(item, str) and item:
                    found.append(item)
                else:
                    walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(entry)
    return sorted(set(found))


def _stat_key(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError as exc:
        return ("unreadable", exc.errno)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _content_digest(path: str) -> str:
    """The modules' reader (helpers/bounded_file.py): a FIFO or a device planted at the path is
    refused without blocking this loop, a huge file is not read past the cap (issue 40)."""
    try:
        return hashlib.sha256(bounded_file.read_bytes(path, "credential file")).hexdigest()
    except bounded_file.FileProblem as exc:
        return "unreadable: %s" % exc


class CredentialWatch:
    """Per provider, a fingerprint of the credential files its entry names."""

    def __init__(self) -> None:
        self._files: dict = {}  # path -> (stat key, content digest)
        self.fingerprints: dict = {}  # provider name -> digest of its files' digests

    def _digest(self, path: str) -> str:
        key = _stat_key(path)
        known = self._files.get(path)
        if known is None or known[0] != key:
            known = (key, _content_digest(path))
            self._files[path] = known
        return known[1]

    def refresh(self, entries: dict) -> set:
        """``entries`` is provider name -> entry of the version in use; returns the providers
        whose files changed since the last call (a provider seen for the first time is not:
        its entry is new, which the caller already counts)."""
        fingerprints = {}
        for name, entry in entries.items():
            parts = ["%s=%s" % (path, self._digest(path)) for path in credential_paths(entry)]
            fingerprints[name] = hashlib.sha256("\n".join(parts).encode()).hexdigest()
        changed = {
            name
            for name, digest in fingerprints.items()
            if name in self.fingerprints and self.fingerprints[name] != digest
        }
        live = {p for entry in entries.values() for p in credential_paths(entry)}
        self._files = {p: v for p, v in self._files.items() if p in live}
        self.fingerprints = fingerprints
        return changed
