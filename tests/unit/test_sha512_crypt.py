"""sha512_crypt against two independent implementations: OpenSSL's ``passwd -6`` and the
real ``basic_ncsa_auth`` helper Squid runs, which must accept the hash and refuse others."""

from __future__ import annotations

import os
import subprocess

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import sha512_crypt

HELPER = "/usr/lib/squid/basic_ncsa_auth"
PASSWORDS = ["a", "S3cr3t pass", "x" * 63, "y" * 64, "z" * 65, "ü€ pass", "p" * 200]
SALTS = ["abcdefghijklmnop", "ab", "./Zz09"]


@pytest.mark.parametrize("salt", SALTS)
@pytest.mark.parametrize("password", PASSWORDS)
def test_hash_matches_openssl(password, salt):
    reference = (
        subprocess.run(
            ["openssl", "passwd", "-6", "-salt", salt, "-stdin"],
            input=password.encode("utf-8"),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    assert sha512_crypt.hash_password(password, salt) == reference


def test_verify_accepts_only_the_password():
    hashed = sha512_crypt.hash_password("right one")
    assert hashed.startswith("$6$") and "right one" not in hashed
    assert sha512_crypt.verify("right one", hashed)
    assert not sha512_crypt.verify("right on", hashed)
    assert not sha512_crypt.verify("right one", "$1$abc$def")
    assert not sha512_crypt.verify("right one", "plain")


def test_fresh_salt_every_time():
    assert sha512_crypt.hash_password("same") != sha512_crypt.hash_password("same")


def test_squid_helper_accepts_the_hash(tmp_path):
    passwd = tmp_path / "passwd"
    passwd.write_text("alice:%s\n" % sha512_crypt.hash_password("S3cr3t pass"))
    os.chmod(passwd, 0o600)
    out = (
        subprocess.run(
            [HELPER, str(passwd)],
            input=b"alice S3cr3t%20pass\nalice wrong\nbob S3cr3t%20pass\n",
            capture_output=True,
            timeout=10,
            check=True,
        )
        .stdout.decode()
        .splitlines()
    )
    assert [line.split()[0] for line in out] == ["OK", "ERR", "ERR"]
