# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The provider error taxonomy (blueprint §3).

Every error a provider method raises is a ``ProviderError`` built with ``wrap()``: it carries
one of four classes, the operation, the *configured* provider name, the provider id and the
cause (kept reachable as ``__cause__`` so callers can still inspect the SDK error). Callers
branch only on the class, through ``class_of()``, which answers ``Transient`` for anything that
was never classified: the safe default, because it retries instead of latching or deleting.
"""

from __future__ import annotations

NOT_FOUND = "not_found"
QUOTA_EXCEEDED = "quota_exceeded"
TRANSIENT = "transient"
PERMANENT = "permanent"

CLASSES = (NOT_FOUND, QUOTA_EXCEEDED, TRANSIENT, PERMANENT)

OPS = ("create", "get", "delete", "list", "check", "sync_auth")

# A Permanent error's ``reason`` when only a new instance can have the requested credentials (a
# VM's are fixed at creation): the module returns it, and the controller replaces the instance
# instead of latching.
REASON_CREDENTIALS_FIXED = "CredentialsFixedAtCreation"

# A Permanent error's ``reason`` when an existing instance listens on another port than asked
# (a port is fixed at creation on every provider): the controller replaces the instance (found
# after a crash, before its status said so) instead of latching.
REASON_PORT_FIXED = "PortFixedAtCreation"

# A Permanent error's ``reason`` when the id names a host (libvirt) the provider's config no
# longer has: nothing can reach the instance, so it is neither read nor deleted, never reported
# gone (a host dropped by a typo would otherwise leak its domains).
REASON_HOST_NOT_CONFIGURED = "HostNotConfigured"

# A Transient error's ``reason`` when another process holds the address and port a local
# instance listens on: Squid could not start there, and says so only in its cache.log.
REASON_ADDRESS_IN_USE = "AddressInUse"


class ProviderError(Exception):
    """One classified failure of one provider operation."""

    def __init__(self, error_class, op, provider_name, provider_id, cause):
        if error_class not in CLASSES:
            raise ValueError("unknown error class %r" % (error_class,))
        self.error_class = error_class
        self.op = op
        self.provider_name = provider_name
        self.provider_id = provider_id
        self.cause = cause
        self.reason = ""  # machine-readable why, for the callers that act on it (REASON_*)
        super().__init__(self._render())

    def _render(self) -> str:
        where = "%s %s" % (self.provider_name or "?", self.op or "?")
        if self.provider_id:
            where += " %s" % self.provider_id
        return "%s: %s: %s" % (where, self.error_class, self.cause)

    @property
    def message(self) -> str:
        return str(self)


def wrap(error_class: str, op: str, provider_name: str, provider_id: str, cause) -> ProviderError:
    """Build a ``ProviderError``; ``cause`` may be an exception or a message.

    Re-wrapping an existing ``ProviderError`` keeps its class unless a class is forced, so a
    helper deep in a provider can classify once and the public method only adds context.
    """
    err = ProviderError(error_class, op, provider_name, provider_id, cause)
    if isinstance(cause, BaseException):
        err.__cause__ = cause
    return err


def class_of(err: BaseException) -> str:
    """The class of ``err``: its own when it is a ``ProviderError``, ``transient`` otherwise."""
    seen = set()
    current = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ProviderError):
            return current.error_class
        current = current.__cause__
    return TRANSIENT


def is_class(err: BaseException, error_class: str) -> bool:
    return class_of(err) == error_class


def not_found(op, provider_name, provider_id, cause) -> ProviderError:
    return wrap(NOT_FOUND, op, provider_name, provider_id, cause)


def permanent(op, provider_name, provider_id, cause) -> ProviderError:
    return wrap(PERMANENT, op, provider_name, provider_id, cause)


def credentials_fixed(op, provider_name, provider_id, cause) -> ProviderError:
    """Permanent: the instance's credentials were fixed at its creation; replace it to change them."""
    err = wrap(PERMANENT, op, provider_name, provider_id, cause)
    err.reason = REASON_CREDENTIALS_FIXED
    return err


def port_fixed(op, provider_name, provider_id, cause) -> ProviderError:
    """Permanent: the instance listens on another port, fixed at its creation; replace it."""
    err = wrap(PERMANENT, op, provider_name, provider_id, cause)
    err.reason = REASON_PORT_FIXED
    return err


def host_not_configured(op, provider_name, provider_id, cause) -> ProviderError:
    """Permanent: the id's host is not in the config, so its instance cannot be reached."""
    err = wrap(PERMANENT, op, provider_name, provider_id, cause)
    err.reason = REASON_HOST_NOT_CONFIGURED
    return err


def transient(op, provider_name, provider_id, cause) -> ProviderError:
    return wrap(TRANSIENT, op, provider_name, provider_id, cause)


def address_in_use(op, provider_name, provider_id, cause) -> ProviderError:
    """Transient: another process holds the instance's address and port (it may let go)."""
    err = wrap(TRANSIENT, op, provider_name, provider_id, cause)
    err.reason = REASON_ADDRESS_IN_USE
    return err


def quota_exceeded(op, provider_name, provider_id, cause) -> ProviderError:
    return wrap(QUOTA_EXCEEDED, op, provider_name, provider_id, cause)


class ConfigError(Exception):
    """The providers file or inline providers are invalid; ``path`` names the offending field."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("invalid providers configuration: " + "; ".join(self.problems))


class UsageError(Exception):
    """A module's own parameters are wrong (a permanent error; nothing was changed)."""


def class_by_type(exc: BaseException, table) -> str:
    """The start of every provider's ``classify``: a ``ProviderError`` keeps its own class (it was
    classified where the knowledge was); otherwise the class of the first ``(exception types,
    error class)`` row of ``table`` that ``exc`` is an instance of, or "" when none is."""
    if isinstance(exc, ProviderError):
        return exc.error_class
    for types, error_class in table:
        if isinstance(exc, types):
            return error_class
    return ""
