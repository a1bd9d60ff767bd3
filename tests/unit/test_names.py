"""Unit tests for core/names.py: deterministic instance names, DNS labels and marks."""

from __future__ import annotations

import base64
import hashlib
import re
import uuid

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names

FIXED_UID = "3f1c2a9e-7b4d-4c1e-9a2f-5d6e7f809a1b"
# Computed outside Python too: printf %s UID | sha256sum | xxd -r -p | base32 | tr A-Z a-z | cut -c1-16
FIXED_NAME = "proxy-7tstuugk7oj57upb"


def independent(uid: str) -> str:
    digest = hashlib.sha256(uid.encode("utf-8")).digest()
    return "proxy-" + base64.b32encode(digest).decode("ascii").lower()[:16]


def test_golden_value():
    assert independent(FIXED_UID) == FIXED_NAME
    assert names.name_from_uid(FIXED_UID) == FIXED_NAME


@pytest.mark.parametrize("uid", ["u1", "a" * 300, "ünïcode-uid", str(uuid.UUID(int=0))])
def test_matches_the_documented_algorithm(uid):
    assert names.name_from_uid(uid) == independent(uid)


def test_deterministic_and_distinct():
    uids = [str(uuid.uuid4()) for _index in range(200)]
    first = [names.name_from_uid(u) for u in uids]
    assert first == [names.name_from_uid(u) for u in uids]
    assert len(set(first)) == len(uids)


def test_format_is_a_dns_label():
    for _attempt in range(100):
        name = names.name_from_uid(str(uuid.uuid4()))
        assert re.fullmatch(r"proxy-[a-z2-7]{16}", name), name
        assert len(name) == 22
        assert names.is_dns_label(name)


@pytest.mark.parametrize("uid", ["", None])
def test_empty_uid_raises(uid):
    with pytest.raises(ValueError, match="uid"):
        names.name_from_uid(uid)


@pytest.mark.parametrize(
    "value,ok",
    [
        ("a", True),
        ("proxy-abc", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("", False),
        (None, False),
        ("-a", False),
        ("a-", False),
        ("A", False),
        ("a_b", False),
        ("a.b", False),
        ("a\n", False),  # a trailing newline must not slip through "$"
        (" a", False),
    ],
)
def test_is_dns_label(value, ok):
    assert names.is_dns_label(value) is ok


def test_marks():
    assert names.marks("uid-1", "prod") == {
        "proxy-operator-managed": "true",
        "proxy-operator-uid": "uid-1",
        "proxy-operator-install": "prod",
    }
    assert names.is_managed(names.marks("u", "i"))
    assert not names.is_managed({"proxy-operator-uid": "u"})
    assert not names.is_managed({"proxy-operator-managed": "True"})
    assert not names.is_managed(None)
