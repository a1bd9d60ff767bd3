"""The providers file as the controller uses it: the last good version, never a broken one.

A mistake in the providers file is a state of the controller, not of each Proxy. The modules
never read the user's file: they read a private copy of the last version that passed two checks,
the controller's own (UTF-8 text, YAML, the top-level shape, unique provider names) and the
modules' (a run of ``proxy_info`` with no ids against the candidate: it parses the whole file and
calls no backend). The file is read and parsed by the modules' own code (helpers/bounded_file.py,
helpers/path_trust.py, config/yaml_reader.py), so the controller refuses what they refuse and its
messages, which reach ``/readyz``, the log and an Event, quote no content (issue 40). A version
that fails either is reported once (log line, metric, ``/readyz``
detail and one Event naming the file and the problem) and the last good copy stays in use, so
no Proxy is latched, loses its instance or gets an Event of its own; the next good version is
taken by itself. Until a first good version exists, no provider call is made at all.

A provider's configuration is its entry and the credential files the entry names
(config/credential_watch.py): ``changed_at`` says when this process last saw either change, which is
what releases a Proxy latched PermanentError before it, and ``epochs`` counts the changes, so an
answer to a call planned under an older configuration is never latched (proxy/reconciler.py). The
first good version counts as a change of every provider: what changed while no controller ran
cannot be known, so each latched Proxy is tried once more after a start.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import
from ..kube import errors
from .credential_watch import CredentialWatch

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import keys, yaml_reader
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import bounded_file

log = logging.getLogger("egress_proxies_controller.config.providers_file")

TOP_LEVEL_KEYS = frozenset(keys.TOP_LEVEL_KEYS)
ENTRY_KEYS = frozenset(keys.ENTRY_KEYS)


def _document(data: bytes):
    """The modules' own reading of a file's bytes (config/yaml_reader.py): strict UTF-8, bounded
    YAML, duplicate keys refused, messages that give a position and never the content."""
    return yaml_reader.load(bounded_file.decode(data))


def entries_of(data: bytes) -> dict:
    """Provider name -> its entry, of a file that passed ``check``."""
    doc = _document(data) or {}
    return {entry["name"]: entry for entry in doc.get("providers") or []}


def entry_digests(data: bytes) -> dict:
    """Provider name -> digest of everything its instances depend on in the file (its entry and
    the installation): what tells which providers a new version changed."""
    doc = _document(data) or {}
    installation = doc.get("installation")
    return {
        entry["name"]: hashlib.sha256(
            json.dumps([installation, entry], sort_keys=True, default=str).encode()
        ).hexdigest()
        for entry in doc.get("providers") or []
    }


def check(data: bytes, path: str) -> tuple[list, str]:
    """``(provider names, "")`` for a file of the right shape, else ``([], problem)``."""
    try:
        doc = _document(data)
    except yaml_reader.FileProblem as exc:
        return [], "%s: %s" % (path, exc)
    doc = {} if doc is None else doc
    if not isinstance(doc, dict):
        return [], "%s: the top level must be a mapping with installation and providers" % path
    unknown = sorted(set(map(str, doc)) - TOP_LEVEL_KEYS)
    if unknown:
        return [], "%s: unknown top-level key(s) %s" % (path, ", ".join(unknown))
    entries = doc.get("providers") or []
    if not isinstance(entries, list):
        return [], "%s: providers must be a list" % path
    names = []
    for index, entry in enumerate(entries):
        where = "%s: providers[%d]" % (path, index)
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            return [], "%s: needs a name" % where
        if not isinstance(entry.get("type"), str):
            return [], "%s (%s): needs a type" % (where, entry["name"])
        extra = sorted(set(map(str, entry)) - ENTRY_KEYS - {entry["type"]})
        if extra:
            return [], "%s (%s): unknown key(s) %s" % (where, entry["name"], ", ".join(extra))
        if entry["name"] in names:
            return [], "%s: provider name %r is used twice" % (where, entry["name"])
        names.append(entry["name"])
    return names, ""


class ProvidersConfig:
    """Watches ``path``; ``in_use`` is the private copy the modules read (None: none good yet).

    ``validate(candidate_path, names)`` is the modules' check (the executor's): it returns the
    problems they find, and raises when it could not run (then the file is tried again later).
    """

    def __init__(self, path: str, private_dir: str, validate, report=None, clock=time.time, describe=None):
        self.path = path
        self._describe = describe  # entry -> the identity it acts as (runs/identity.py), logged
        self.private_dir = private_dir
        self._validate = validate
        self._report = report or (lambda error: None)  # called once per new problem, "" when fixed
        self.names: list = []
        self.digests: dict = {}  # provider name -> entry digest of the version in use
        self.changed: set = set()  # providers the last refresh added, removed or changed
        self.rotated: set = set()  # providers only whose credential files the last refresh saw change
        self.entries: dict = {}  # provider name -> entry of the version in use
        self.changed_at: dict = {}  # provider name -> wall time its configuration last changed
        self.epochs: dict = {}  # provider name -> how many times it changed in this process
        self._credentials = CredentialWatch()
        self._clock = clock
        self.in_use: str | None = None
        self.error = ""
        self._seen = None  # digest of the last version looked at
        os.makedirs(private_dir, mode=0o700, exist_ok=True)
        for stale in os.listdir(private_dir):  # copies of an earlier process: never read again
            os.unlink(os.path.join(private_dir, stale))

    def refresh(self) -> bool:
        """Look at the file and the credential files of the version in use; True when the
        configuration in use changed: ``changed`` names the providers whose entry changed (their
        Proxies are planned again), ``rotated`` those whose credential files alone changed (their
        latched Proxies are)."""
        took = self._take_new_version()
        if not took:
            self.changed = set()
        self.rotated = self._credentials.refresh(self.entries) - self.changed
        if not took and not self.rotated:
            return False
        now = self._clock()
        for name in self.changed | self.rotated:
            self.changed_at[name] = now
            self.epochs[name] = self.epochs.get(name, 0) + 1
        for name in self.rotated:
            log.info("credential files of provider %s changed: its latched Proxies are planned again", name)
        return True

    def _take_new_version(self) -> bool:
        """True when a new good version of the file is now in use (``changed`` set)."""
        problem = ""
        try:  # the modules' reader and ownership rule: a FIFO, a device or a foreign file never
            # blocks or feeds this loop (issue 40)
            data = bounded_file.read_bytes(self.path, "providers file", trusted=True)
        except bounded_file.FileProblem as exc:
            data = None
            problem = "%s: %s" % (self.path, exc)
        digest = hashlib.sha256(data).hexdigest() if data is not None else "unreadable: %s" % problem
        if digest == self._seen:
            return False
        if data is None:
            self._seen = digest
            self._fail(problem)
            return False
        names, problem = check(data, self.path)
        if problem:
            self._seen = digest
            self._fail(problem)
            return False
        candidate = self._write_private(data, digest)
        try:
            problems = self._validate(candidate, names)
        except Exception as exc:  # the check could not run: try this version again next time
            log.warning("providers file %s: could not be checked yet: %s", self.path, errors.describe(exc))
            os.unlink(candidate)
            return False
        self._seen = digest
        if problems:
            os.unlink(candidate)
            # The modules name the copy they read: say the user's file instead.
            self._fail("; ".join(p.replace(candidate, self.path) for p in problems))
            return False
        # Earlier copies stay until the process ends: a run still in flight may read one.
        digests = entry_digests(data)
        self.changed = {n for n in set(digests) | set(self.digests) if digests.get(n) != self.digests.get(n)}
        self.in_use, self.names, self.digests = candidate, names, digests
        self.entries = entries_of(data)
        log.info("providers file %s in use: providers %s", self.path, ", ".join(names) or "none")
        for name in sorted(self.changed & set(self.entries)) if self._describe else ():
            log.info("provider %s acts as %s", name, self._describe(self.entries[name]))
        if self.error:
            self.error = ""
            self._report("")
        return True

    def _fail(self, problem: str) -> None:
        if problem == self.error:
            return
        self.error = problem
        kept = "keeping the last good version" if self.in_use else "no provider calls until it is fixed"
        log.error("providers file problem: %s (%s)", problem, kept)
        self._report(problem)

    def _write_private(self, data: bytes, digest: str) -> str:
        prefix = "providers-%s-" % digest[:12]
        fd, path = tempfile.mkstemp(prefix=prefix, suffix=".yaml", dir=self.private_dir)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        return path
