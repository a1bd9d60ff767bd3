# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The prologue every provider operation shares, written once: parse the id, classify, wrap.

amazon.aws gives each AWS service one error-handler class whose wrappers turn botocore's
exceptions into the collection's own, the service supplying only what differs (which error
means "missing"). ``ErrorSeam`` is that for the provider contract: a provider mixes it in and
supplies two hooks, ``_parse_id`` (its strict id parser, ``ValueError`` when malformed) and
``_fail`` (its ``classify`` plus ``errors.wrap`` with the configured name); each operation then
runs its body inside ``with self.operation(op, provider_id) as parts:``. What it does, the same
for every provider (docs/contract.md, "Errors"):

* a malformed id is Permanent before the backend is touched: a lookup of something else could
  answer NotFound for an instance that exists;
* a ``ProviderError`` raised in the body passes unchanged: it was classified where the knowledge
  was (a NotFound with its proof, a refusal), and wrapping it again would repeat its message;
* any other ``Exception`` becomes ``_fail(op, provider_id, exc, **hints)``, raised ``from exc``:
  the exception the body raised is the ``__cause__`` (so ``errors.class_of``, the callers and the
  tests still reach the backend's error), and the message is only what ``_fail`` rendered;
* anything else (``KeyboardInterrupt``, ``SystemExit``, ``GeneratorExit``) is neither classified
  nor swallowed: it is not a failure of the backend.

No third-party import: the core layer (docs/architecture.md).
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors


class _Operation:
    """One operation's seam; built by ``ErrorSeam.operation``."""

    __slots__ = ("_hints", "_op", "_parse", "_provider_id", "_seam")

    def __init__(self, seam: ErrorSeam, op: str, provider_id: str, parse: bool, hints: dict):
        self._seam = seam
        self._op = op
        self._provider_id = provider_id
        self._parse = parse
        self._hints = hints

    def __enter__(self) -> object:
        if not self._parse:
            return None
        try:
            return self._seam._parse_id(self._provider_id)
        except ValueError as exc:
            raise errors.permanent(self._op, self._seam.name, self._provider_id, exc) from exc

    def __exit__(self, exc_type: type | None, exc: BaseException | None, traceback: object) -> bool:
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, errors.ProviderError):
            return False  # never swallowed: the exception goes on as it was
        raise self._seam._fail(self._op, self._provider_id, exc, **self._hints) from exc


class ErrorSeam:
    """Mixin of every provider: ``operation()`` and the two hooks it calls."""

    name: str  # the configured provider name (``contract.Provider`` sets it)

    def _parse_id(self, provider_id: str) -> object:
        """The id's parts, given to the ``with`` statement's target; ``ValueError`` when malformed."""
        raise NotImplementedError

    def _fail(self, op: str, provider_id: str, exc: BaseException, **hints) -> errors.ProviderError:
        """The classified ``ProviderError`` for ``exc`` (never a ``ProviderError`` itself)."""
        raise NotImplementedError

    def operation(self, op: str, provider_id: str = "", *, parse: bool = True, **hints) -> _Operation:
        """The seam around one operation's body; ``provider_id`` is the id its errors name.
        ``parse``: the id is an input to check first (get, delete, ...), not one the operation
        made itself (create) nor none at all (list). ``hints`` go to ``_fail`` unchanged: what
        only this call knows (which object a NotFound must be about, the host type whose fix a
        failure names)."""
        return _Operation(self, op, provider_id, parse, hints)
