# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Proxy credentials: one basic-auth user per proxy, validated before anything is touched.

The cleartext lives only in memory (``Auth.password`` is left out of ``repr``); what reaches a
proxy is the password file line ``username:$6$...`` (sha512_crypt), which Squid's
``basic_ncsa_auth`` checks. A username with ``:`` cannot be written in that file nor sent in an
HTTP ``Basic`` header, a newline or NUL anywhere would forge another line of it, a leading ``#``
makes the line a comment to ``basic_ncsa_auth``, and characters outside ASCII have no agreed
encoding in a ``Basic`` header, so they are refused with the field named.
"""

from __future__ import annotations

import base64
import dataclasses

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import sha512_crypt
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt

MAX_USERNAME_CHARS = 64
MAX_PASSWORD_CHARS = 256
FIELDS = ("username", "password")
REALM = "egress-proxy"


@dataclasses.dataclass(frozen=True)
class Auth:
    username: str
    password: str = dataclasses.field(repr=False)

    def passwd_line(self, salt: str = "") -> str:
        """The password file line: the username and the salted hash, never the cleartext."""
        return "%s:%s\n" % (self.username, sha512_crypt.hash_password(self.password, salt))

    def matches(self, passwd_text: str) -> bool:
        """Whether a password file holds exactly this user with this password."""
        lines = [line for line in passwd_text.splitlines() if line]
        if len(lines) != 1 or ":" not in lines[0]:
            return False
        user, hashed = lines[0].split(":", 1)
        return user == self.username and sha512_crypt.verify(self.password, hashed)

    def header(self) -> str:
        """The ``Proxy-Authorization`` value a client sends."""
        token = base64.b64encode(("%s:%s" % (self.username, self.password)).encode("utf-8"))
        return "Basic " + token.decode("ascii")


def problems(value, field: str = "auth") -> list:
    """One ``field: problem`` line per problem; the password is never quoted."""
    if value is None:
        return []
    if not isinstance(value, dict):
        return ["%s: must be a mapping with username and password, not %s" % (field, excerpt(value))]
    out = ["%s.%s: unknown key" % (field, excerpt(key)) for key in value if key not in FIELDS]
    username, password = value.get("username"), value.get("password")
    out += _username_problems(username, "%s.username" % field)
    out += _password_problems(password, "%s.password" % field)
    return out


# What is wrong with a username or password: ``username_fault`` and ``password_fault`` hold the
# rule once; ``problems`` words a fault for a playbook (field and value), the controller's
# auth_secret for a Secret (its key, never a value). Checked in this order, the first one wins.
EMPTY = "empty"
TOO_LONG = "too long"
COLON = "colon"  # username: HTTP basic auth and the password file both split on ':'
WHITESPACE = "whitespace"  # username: whitespace or control characters
HASH = "hash"  # username: basic_ncsa_auth reads a line starting with '#' as a comment
NON_ASCII = "non-ascii"  # username: a Basic header names no charset
CONTROL = "control"  # password: control characters (newline, NUL, tab, ...)


def username_fault(value: str) -> str:
    """The first fault of a username string (``EMPTY`` ... ``NON_ASCII``), ``""`` when fine."""
    if not value:
        return EMPTY
    if len(value) > MAX_USERNAME_CHARS:
        return TOO_LONG
    if ":" in value:
        return COLON
    if any(not ch.isprintable() or ch.isspace() for ch in value):
        return WHITESPACE
    if value.startswith("#"):
        return HASH
    if not value.isascii():
        return NON_ASCII
    return ""


def password_fault(value: str) -> str:
    """The first fault of a password string (``EMPTY``, ``TOO_LONG``, ``CONTROL``), ``""`` when fine."""
    if not value:
        return EMPTY
    if len(value) > MAX_PASSWORD_CHARS:
        return TOO_LONG
    if any(not ch.isprintable() for ch in value):
        return CONTROL
    return ""


def _username_problems(value, field: str) -> list:
    if not isinstance(value, str):
        return ["%s: required, a string (not %s)" % (field, excerpt(value))]
    fault = username_fault(value)
    if fault == EMPTY:
        return ["%s: must not be empty" % field]
    if fault == TOO_LONG:
        return ["%s: %s is longer than %d characters" % (field, excerpt(value), MAX_USERNAME_CHARS)]
    if fault == COLON:
        return [
            "%s: %s contains ':', which HTTP basic auth cannot carry in a username" % (field, excerpt(value))
        ]
    if fault == WHITESPACE:
        return ["%s: %s contains whitespace or control characters" % (field, excerpt(value))]
    if fault == HASH:
        return [
            "%s: %s starts with '#', which the password file's reader (basic_ncsa_auth) takes for a "
            "comment line, so it could never log in" % (field, excerpt(value))
        ]
    if fault == NON_ASCII:
        return [
            "%s: %s has characters outside ASCII: HTTP basic auth names no charset for the user "
            "id, so clients send them in different encodings and the password file cannot match"
            % (field, excerpt(value))
        ]
    return []


def _password_problems(value, field: str) -> list:
    if not isinstance(value, str):
        kind = "nothing" if value is None else "a %s" % type(value).__name__
        return ["%s: required, a string (not %s)" % (field, kind)]
    words = {
        EMPTY: "must not be empty",
        TOO_LONG: "is longer than %d characters" % MAX_PASSWORD_CHARS,
        CONTROL: "contains control characters (newline, NUL, tab, ...)",
    }
    fault = password_fault(value)
    return ["%s: %s" % (field, words[fault])] if fault else []


def from_value(value) -> Auth | None:
    """The ``Auth`` of a validated value (``problems(value)`` empty), ``None`` for no auth."""
    if not value:
        return None
    return Auth(value["username"], value["password"])
