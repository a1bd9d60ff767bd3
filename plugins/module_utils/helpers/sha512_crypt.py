# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""SHA-512 crypt (``$6$``), the password hash Squid's ``basic_ncsa_auth`` checks through crypt(3).

Written out with ``hashlib`` because Python's ``crypt`` module is deprecated and gone in 3.13,
and the hash is made on the host that runs the module, whatever its Python: the cleartext never
has to reach the proxy's disk, only this hash. The algorithm is Ulrich Drepper's published
specification ("Unix crypt using SHA-256 and SHA-512"), default 5000 rounds.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

ALPHABET = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
ROUNDS = 5000
SALT_CHARS = 16
# The byte triples of the final digest, in the order the specification encodes them.
_ORDER = (
    (0, 21, 42),
    (22, 43, 1),
    (44, 2, 23),
    (3, 24, 45),
    (25, 46, 4),
    (47, 5, 26),
    (6, 27, 48),
    (28, 49, 7),
    (50, 8, 29),
    (9, 30, 51),
    (31, 52, 10),
    (53, 11, 32),
    (12, 33, 54),
    (34, 55, 13),
    (56, 14, 35),
    (15, 36, 57),
    (37, 58, 16),
    (59, 17, 38),
    (18, 39, 60),
    (40, 61, 19),
    (62, 20, 41),
)


def _repeat(digest: bytes, length: int) -> bytes:
    return (digest * (length // len(digest) + 1))[:length]


def _encode(b2: int, b1: int, b0: int, chars: int) -> str:
    word = (b2 << 16) | (b1 << 8) | b0
    out = []
    for _step in range(chars):
        out.append(ALPHABET[word & 0x3F])
        word >>= 6
    return "".join(out)


def new_salt() -> str:
    return "".join(secrets.choice(ALPHABET) for _char in range(SALT_CHARS))


def hash_password(password: str, salt: str = "") -> str:
    """``$6$<salt>$<hash>`` of ``password`` (UTF-8); a fresh random salt unless one is given."""
    salt = (salt or new_salt())[:SALT_CHARS]
    key, salt_bytes = password.encode("utf-8"), salt.encode("ascii")
    alternate = hashlib.sha512(key + salt_bytes + key).digest()
    first = hashlib.sha512(key + salt_bytes)
    first.update(_repeat(alternate, len(key)))
    length = len(key)
    while length:
        first.update(alternate if length & 1 else key)
        length >>= 1
    digest = first.digest()
    p_bytes = _repeat(hashlib.sha512(key * len(key)).digest(), len(key))
    s_bytes = _repeat(hashlib.sha512(salt_bytes * (16 + digest[0])).digest(), len(salt_bytes))
    for i in range(ROUNDS):
        step = hashlib.sha512(p_bytes if i & 1 else digest)
        if i % 3:
            step.update(s_bytes)
        if i % 7:
            step.update(p_bytes)
        step.update(digest if i & 1 else p_bytes)
        digest = step.digest()
    encoded = "".join(_encode(digest[a], digest[b], digest[c], 4) for a, b, c in _ORDER)
    encoded += _encode(0, 0, digest[63], 2)
    return "$6$%s$%s" % (salt, encoded)


def verify(password: str, hashed: str) -> bool:
    """Whether ``hashed`` (a ``$6$`` hash with the default rounds) is the hash of ``password``."""
    parts = hashed.split("$")
    if len(parts) != 4 or parts[0] or parts[1] != "6":
        return False
    return hmac.compare_digest(hash_password(password, parts[2]), hashed)
