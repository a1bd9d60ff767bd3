"""A Proxy's ``spec.auth.secretRef``: the credentials read from its Secret, checked, for one run.

Read with one ``get`` when a create or poll needs them (RBAC: get on secrets, never list or
watch), handed to the module run in memory (the executor's memfd payload; the module's password
option is ``no_log``), and never logged, written to status or put in an Event: every message
here names the Secret and the key, never a value. A Secret that is missing, incomplete or holds
credentials the module would refuse is a ``LookupError``: the Proxy gets
``CredentialsApplied=False`` (``SecretUnavailable``) and is retried, because fixing the Secret
changes no generation and a PermanentError latch would never be released.

The rule is the collection's (``plugins/module_utils/helpers/proxy_auth.py``: ``username_fault``,
``password_fault``), so the controller refuses exactly what the module would; only the wording
is the controller's, naming the Secret's key.
"""

from __future__ import annotations

# collection first: it makes the collection's module_utils importable (collection.py)
from .. import collection  # noqa: F401  # pylint: disable=unused-import

# isort: split
from .. import api

# isort: split
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import proxy_auth

KEYS = ("username", "password")
# What a missing Secret or key message adds, so the user can make the Secret without the docs.
_NEEDS = (
    "it needs the keys username and password "
    "(kubectl create secret generic %s -n %s --from-literal=username=... --from-literal=password=...)"
)
# How each fault reads after "key <name>" in a Condition or Event: the key, never its value.
_WORDS = {
    "username": {
        proxy_auth.EMPTY: "is empty",
        proxy_auth.TOO_LONG: "is longer than %d characters" % proxy_auth.MAX_USERNAME_CHARS,
        proxy_auth.COLON: "contains ':', which HTTP basic auth cannot carry",
        proxy_auth.WHITESPACE: "contains whitespace or control characters",
        proxy_auth.HASH: "starts with '#', which the proxy's password file reads as a comment",
        proxy_auth.NON_ASCII: "has characters outside ASCII, for which HTTP basic auth names no charset",
    },
    "password": {
        proxy_auth.EMPTY: "is empty",
        proxy_auth.TOO_LONG: "is longer than %d characters" % proxy_auth.MAX_PASSWORD_CHARS,
        proxy_auth.CONTROL: "contains control characters (a trailing newline from echo?)",
    },
}


class Unavailable(LookupError):
    """The credentials cannot be had now; the message names the Secret and key, never a value."""

    reason = api.REASON_SECRET_UNAVAILABLE


def problem(username: str, password: str) -> str:
    """Why the module would refuse these credentials, without quoting either; ``""`` if none."""
    faults = (
        ("username", proxy_auth.username_fault(username)),
        ("password", proxy_auth.password_fault(password)),
    )
    for key, fault in faults:
        if fault:
            return "key %s %s" % (key, _WORDS[key][fault])
    return ""


def needs(namespace: str, name: str) -> str:
    """What a missing Secret or key message adds (a Proxy's or a ProxyPool's)."""
    return _NEEDS % (name, namespace)


def credentials(kube, namespace: str, name: str) -> dict:
    """``{"username", "password"}`` of the Secret, or ``LookupError`` saying what is wrong."""
    try:
        values = kube.secret_values(namespace, name, KEYS, what="auth")
    except LookupError as exc:  # missing Secret or key: say what the Secret must hold
        raise Unavailable("%s; %s" % (exc, needs(namespace, name))) from None
    except Exception as exc:  # API timeouts, connection errors: this Proxy retries
        raise Unavailable("auth Secret %s/%s: %s" % (namespace, name, type(exc).__name__)) from None
    why = problem(values["username"], values["password"])
    if why:
        raise Unavailable("auth Secret %s/%s: %s" % (namespace, name, why))
    return {key: values[key] for key in KEYS}
