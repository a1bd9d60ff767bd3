"""A Proxy's ``spec.auth.secretRef``: the credentials read from its Secret, checked, for one run.

Read with one ``get`` when a create or poll needs them (RBAC: get on secrets, never list or
watch), handed to the module run in memory (the executor's memfd payload; the module's password
option is ``no_log``), and never logged, written to status or put in an Event: every message
here names the Secret and the key, never a value. A Secret that is missing, incomplete or holds
credentials the module would refuse is a ``LookupError``: the Proxy gets
``CredentialsApplied=False`` (``SecretUnavailable``) and is retried, because fixing the Secret
changes no generation and a PermanentError latch would never be released.

The rules repeat the collection's ``plugins/module_utils/proxy_auth.py`` (the controller imports
no module_utils); ``tests/controller/test_auth_secret.py`` checks that both agree.
"""

from __future__ import annotations

from . import api

KEYS = ("username", "password")
MAX_USERNAME_CHARS = 64
MAX_PASSWORD_CHARS = 256


class Unavailable(LookupError):
    """The credentials cannot be had now; the message names the Secret and key, never a value."""

    reason = api.REASON_SECRET_UNAVAILABLE


def problem(username: str, password: str) -> str:
    """Why the module would refuse these credentials, without quoting either; ``""`` if none."""
    if not username:
        return "key username is empty"
    if len(username) > MAX_USERNAME_CHARS:
        return "key username is longer than %d characters" % MAX_USERNAME_CHARS
    if ":" in username:
        return "key username contains ':', which HTTP basic auth cannot carry"
    if any(not ch.isprintable() or ch.isspace() for ch in username):
        return "key username contains whitespace or control characters"
    if not password:
        return "key password is empty"
    if len(password) > MAX_PASSWORD_CHARS:
        return "key password is longer than %d characters" % MAX_PASSWORD_CHARS
    if any(not ch.isprintable() for ch in password):
        return "key password contains control characters (a trailing newline from echo?)"
    return ""


def credentials(kube, namespace: str, name: str) -> dict:
    """``{"username", "password"}`` of the Secret, or ``LookupError`` saying what is wrong."""
    try:
        values = kube.secret_values(namespace, name, KEYS, what="auth")
    except LookupError as exc:
        raise Unavailable(str(exc)) from None
    except Exception as exc:  # API timeouts, connection errors: this Proxy retries
        raise Unavailable("auth Secret %s/%s: %s" % (namespace, name, type(exc).__name__)) from None
    why = problem(values["username"], values["password"])
    if why:
        raise Unavailable("auth Secret %s/%s: %s" % (namespace, name, why))
    return {key: values[key] for key in KEYS}
