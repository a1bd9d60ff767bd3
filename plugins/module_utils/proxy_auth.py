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

from ansible_collections.crawl.egress_proxies.plugins.module_utils import sha512_crypt
from ansible_collections.crawl.egress_proxies.plugins.module_utils.excerpt import excerpt

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


def _username_problems(value, field: str) -> list:
    if not isinstance(value, str):
        return ["%s: required, a string (not %s)" % (field, excerpt(value))]
    if not value:
        return ["%s: must not be empty" % field]
    if len(value) > MAX_USERNAME_CHARS:
        return ["%s: %s is longer than %d characters" % (field, excerpt(value), MAX_USERNAME_CHARS)]
    if ":" in value:
        return [
            "%s: %s contains ':', which HTTP basic auth cannot carry in a username" % (field, excerpt(value))
        ]
    if any(not ch.isprintable() or ch.isspace() for ch in value):
        return ["%s: %s contains whitespace or control characters" % (field, excerpt(value))]
    if value.startswith("#"):
        return [
            "%s: %s starts with '#', which the password file's reader (basic_ncsa_auth) takes for a "
            "comment line, so it could never log in" % (field, excerpt(value))
        ]
    if not value.isascii():
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
    if not value:
        return ["%s: must not be empty" % field]
    if len(value) > MAX_PASSWORD_CHARS:
        return ["%s: is longer than %d characters" % (field, MAX_PASSWORD_CHARS)]
    if any(not ch.isprintable() for ch in value):
        return ["%s: contains control characters (newline, NUL, tab, ...)" % field]
    return []


def from_value(value) -> Auth | None:
    """The ``Auth`` of a validated value (``problems(value)`` empty), ``None`` for no auth."""
    if not value:
        return None
    return Auth(value["username"], value["password"])
