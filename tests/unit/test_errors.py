"""Unit tests for the error taxonomy (core/errors.py): wrap, class_of, rendering, ConfigError."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors


class SdkError(Exception):
    """Stands for a backend SDK's own exception type."""


def test_wrap_keeps_cause_reachable():
    cause = SdkError("HTTP 403 forbidden")
    err = errors.wrap(errors.PERMANENT, "create", "gcp-eu", "zones/z/instances/x", cause)
    assert err.__cause__ is cause
    assert err.cause is cause
    assert isinstance(err.__cause__, SdkError)
    assert (err.error_class, err.op, err.provider_name, err.provider_id) == (
        errors.PERMANENT,
        "create",
        "gcp-eu",
        "zones/z/instances/x",
    )


def test_wrap_with_a_message_has_no_exception_cause():
    err = errors.wrap(errors.NOT_FOUND, "get", "kvm-a", "hosts/h/domains/d", "no such domain")
    assert err.__cause__ is None
    assert "no such domain" in str(err)


def test_str_names_provider_op_id_class_and_cause():
    err = errors.wrap(errors.TRANSIENT, "delete", "local-b", "local/proxy-x", SdkError("connection reset"))
    text = str(err)
    for part in ("local-b", "delete", "local/proxy-x", "transient", "connection reset"):
        assert part in text
    assert err.message == text
    assert text.startswith("local-b delete local/proxy-x: transient: ")


def test_str_without_id_or_name():
    err = errors.wrap(errors.TRANSIENT, "list", "", "", "boom")
    assert str(err) == "? list: transient: boom"


def test_unknown_class_is_refused():
    with pytest.raises(ValueError, match="unknown error class"):
        errors.wrap("fatal", "get", "p", "id", "x")


@pytest.mark.parametrize(
    "exc",
    [
        Exception("plain"),
        SdkError("sdk"),
        OSError(111, "refused"),
        TimeoutError("slow"),
        KeyError("k"),
    ],
)
def test_class_of_unclassified_is_transient(exc):
    assert errors.class_of(exc) == errors.TRANSIENT


@pytest.mark.parametrize("error_class", errors.CLASSES)
def test_class_of_own_class(error_class):
    err = errors.wrap(error_class, "get", "p", "id", SdkError("x"))
    assert errors.class_of(err) == error_class
    assert errors.is_class(err, error_class)
    assert all(not errors.is_class(err, other) for other in errors.CLASSES if other != error_class)


def test_class_of_follows_chained_causes():
    inner = errors.quota_exceeded("create", "p", "id", SdkError("rate limited"))
    try:
        try:
            raise inner
        except errors.ProviderError as exc:
            raise RuntimeError("while creating") from exc
    except RuntimeError as outer:
        assert errors.class_of(outer) == errors.QUOTA_EXCEEDED


def test_class_of_outermost_provider_error_wins():
    inner = errors.not_found("get", "p", "id", "gone")
    outer = errors.wrap(errors.PERMANENT, "get", "p", "id", inner)
    assert outer.__cause__ is inner
    assert errors.class_of(outer) == errors.PERMANENT


def test_class_of_survives_a_cause_cycle():
    first, second = SdkError("a"), SdkError("b")
    first.__cause__, second.__cause__ = second, first
    assert errors.class_of(first) == errors.TRANSIENT


@pytest.mark.parametrize(
    "helper,error_class",
    [
        (errors.not_found, errors.NOT_FOUND),
        (errors.permanent, errors.PERMANENT),
        (errors.transient, errors.TRANSIENT),
        (errors.quota_exceeded, errors.QUOTA_EXCEEDED),
    ],
)
def test_helpers(helper, error_class):
    cause = SdkError("x")
    err = helper("get", "prov", "the-id", cause)
    assert err.error_class == error_class and err.__cause__ is cause
    assert err.provider_name == "prov" and err.provider_id == "the-id" and err.op == "get"


def test_config_error_lists_every_problem():
    err = errors.ConfigError(["providers[0].name: bad", "providers[1].type: unknown"])
    assert err.problems == ["providers[0].name: bad", "providers[1].type: unknown"]
    assert "providers[0].name: bad" in str(err) and "providers[1].type: unknown" in str(err)
