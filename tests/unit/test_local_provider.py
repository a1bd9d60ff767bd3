"""Unit tests for the local provider's pure parts: parse_id, classify, and construction."""

from __future__ import annotations

import errno
import fcntl
import threading
import time

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import (
    Deadline,
    DeadlineExceeded,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.provider import (
    SquidMissing,
    classify,
    parse_id,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.store import StoreError


@pytest.mark.parametrize(
    "provider_id,name",
    [
        ("local/proxy-abcdefghijklmnop", "proxy-abcdefghijklmnop"),
        ("local/a", "a"),
        ("local/" + "a" * 63, "a" * 63),
    ],
)
def test_parse_id_accepts(provider_id, name):
    assert parse_id(provider_id) == name


@pytest.mark.parametrize(
    "provider_id",
    [
        "",
        "local",
        "local/",
        "proxy-x",
        "Local/proxy-x",
        "gcp/proxy-x",
        "local//proxy-x",
        "local/proxy-x/extra",
        "local/../etc",
        "local/.hidden",
        "local/Proxy-X",
        "local/proxy_x",
        "local/-x",
        "local/x-",
        "local/proxy-x\n",
        " local/proxy-x",
        "local/" + "a" * 64,
        None,
        42,
    ],
)
def test_parse_id_rejects(provider_id):
    with pytest.raises(ValueError, match="malformed local provider id"):
        parse_id(provider_id)


@pytest.mark.parametrize(
    "exc,error_class",
    [
        (errors.not_found("get", "p", "i", "x"), errors.NOT_FOUND),
        (errors.quota_exceeded("create", "p", "i", "x"), errors.QUOTA_EXCEEDED),
        (errors.permanent("create", "p", "i", "x"), errors.PERMANENT),
        (DeadlineExceeded("create ran past its deadline"), errors.TRANSIENT),
        (SquidMissing("squid binary 'squid' not found"), errors.PERMANENT),
        (PermissionError(errno.EACCES, "denied"), errors.PERMANENT),
        (StoreError("address range 127.77.0.0/30 is exhausted (2 in use)"), errors.QUOTA_EXCEEDED),
        (OSError(errno.ENOSPC, "No space left on device"), errors.QUOTA_EXCEEDED),
        (StoreError("cannot list /x: I/O error"), errors.TRANSIENT),
        (OSError(errno.EIO, "I/O error"), errors.TRANSIENT),
        (OSError("no errno"), errors.TRANSIENT),
        (ConnectionRefusedError(errno.ECONNREFUSED, "refused"), errors.TRANSIENT),
        (ValueError("anything else"), errors.TRANSIENT),
        (Exception("not an SDK error"), errors.TRANSIENT),
    ],
)
def test_classify(exc, error_class):
    assert classify(exc) == error_class


def test_constructor_never_touches_the_backend(tmp_path):
    state = tmp_path / "never-created"
    parsed = providers_file.parse(
        {
            "providers": [
                {
                    "name": "lab",
                    "type": "local",
                    "local": {"stateDir": str(state), "squidBinary": "/nonexistent/squid"},
                }
            ]
        }
    )
    provider = registry.build(parsed.providers[0], parsed.installation)
    assert provider.name == "lab" and provider.type_name == "local"
    assert not state.exists()
    assert provider.id_for("proxy-a", None) == "local/proxy-a"
    assert provider.id_for("Not A Label", None) is None


def _provider(tmp_path):
    parsed = providers_file.parse(
        {"providers": [{"name": "lab", "type": "local", "local": {"stateDir": str(tmp_path)}}]}
    )
    return registry.build(parsed.providers[0], parsed.installation)


def test_delete_refuses_an_unmarked_instance_directory(tmp_path):
    """Issue 15: a hand-made directory with no marks is not ours, whoever names its id."""
    handmade = tmp_path / "instances" / "handmade"
    handmade.mkdir(parents=True)
    (handmade / "instance.json").write_text('{"name": "handmade", "address": "127.0.0.9", "port": 1}')
    with pytest.raises(errors.ProviderError, match="not managed") as caught:
        _provider(tmp_path).delete("local/handmade", Deadline(5))
    assert caught.value.error_class == errors.PERMANENT
    assert (handmade / "instance.json").exists()


def test_a_held_instance_lock_is_bounded_by_the_deadline(tmp_path):
    """Issue 15: the local provider's flock waited forever (another process holding the lock
    held the whole batch worker); it now gives up at the deadline, Transient."""
    locks = tmp_path / "locks"
    locks.mkdir()
    (tmp_path / "instances" / "proxy-a").mkdir(parents=True)
    (tmp_path / "instances" / "proxy-a" / "instance.json").write_text('{"proxy-operator-managed": "true"}')
    holder = open(locks / "proxy-a", "a")  # noqa: SIM115 (held across the call)
    fcntl.flock(holder, fcntl.LOCK_EX)
    outcome = []

    def call():
        try:
            _provider(tmp_path).delete("local/proxy-a", Deadline(0.5))
            outcome.append("returned")
        except errors.ProviderError as exc:
            outcome.append(exc.error_class)

    worker = threading.Thread(target=call, daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(5)
    finished = not worker.is_alive()
    fcntl.flock(holder, fcntl.LOCK_UN)
    holder.close()
    worker.join(5)
    assert finished, "delete still waiting for the lock after 5 s with a 0.5 s deadline"
    assert outcome == [errors.TRANSIENT] and time.monotonic() - started < 5
