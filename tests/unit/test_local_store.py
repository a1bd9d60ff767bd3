"""Unit tests for the local provider's store: atomic instance directories, address allocation
under concurrency and exhaustion, and failures that must not look like an empty store."""

from __future__ import annotations

import json
import os
import threading

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.provider import classify
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.store import (
    RECORD,
    Store,
    StoreError,
)


@pytest.fixture
def store(tmp_path):
    return Store(str(tmp_path / "state"), "127.200.1.0/28")


def test_create_writes_marks_and_files_atomically(store):
    record = store.create(
        "proxy-a", "uid-a", "inst", 3128, {"squid.conf": lambda r: "listen %s\n" % r["address"]}
    )
    assert names.is_managed(record)
    assert (record[names.LABEL_UID], record[names.LABEL_INSTALL], record["port"]) == ("uid-a", "inst", 3128)
    assert store.read("proxy-a") == record
    with open(os.path.join(store.path("proxy-a"), "squid.conf"), encoding="utf-8") as handle:
        assert handle.read() == "listen %s\n" % record["address"]
    assert store.names() == ["proxy-a"]  # no staging directory left behind, nor listed


def test_create_is_idempotent_by_name(store):
    first = store.create("proxy-a", "uid-a", "inst", 3128, {})
    assert store.create("proxy-a", "uid-b", "inst", 9999, {}) == first


def test_concurrent_creates_get_distinct_addresses(store):
    results = {}

    def create(index):
        results[index] = store.create("proxy-%d" % index, "uid-%d" % index, "inst", 3128, {})["address"]

    threads = [threading.Thread(target=create, args=(i,)) for i in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(results) == 10
    assert len(set(results.values())) == 10


def test_exhausted_range_is_quota(tmp_path):
    small = Store(str(tmp_path / "state"), "127.200.2.0/30")  # two usable hosts
    small.create("proxy-a", "a", "inst", 3128, {})
    small.create("proxy-b", "b", "inst", 3128, {})
    with pytest.raises(StoreError, match="exhausted") as exc_info:
        small.create("proxy-c", "c", "inst", 3128, {})
    assert classify(exc_info.value) == "quota_exceeded"
    assert small.names() == ["proxy-a", "proxy-b"]


def test_failed_render_leaves_nothing(store):
    def explode(record):
        raise RuntimeError("render failed")

    with pytest.raises(RuntimeError):
        store.create("proxy-a", "uid-a", "inst", 3128, {"squid.conf": explode})
    assert store.read("proxy-a") is None
    assert os.listdir(store.instances_dir) == []


def test_remove_is_idempotent(store):
    store.create("proxy-a", "uid-a", "inst", 3128, {})
    store.remove("proxy-a")
    store.remove("proxy-a")
    assert store.read("proxy-a") is None
    assert os.listdir(store.instances_dir) == []


def test_missing_state_dir_is_empty(store):
    assert store.names() == []
    assert store.read("proxy-a") is None


def test_unreadable_listing_is_an_error_not_empty(store):
    os.makedirs(store.state_dir)
    with open(store.instances_dir, "w", encoding="utf-8") as handle:
        handle.write("not a directory")
    with pytest.raises(StoreError):
        store.names()


def test_state_dir_that_is_a_file_is_an_error(tmp_path):
    path = tmp_path / "state"
    path.write_text("file")
    with pytest.raises(StoreError, match=r"(?i)not a directory"):
        Store(str(path), "127.200.3.0/28").names()


def test_directory_without_record_is_an_error(store):
    os.makedirs(store.path("proxy-a"))
    with pytest.raises(StoreError, match=RECORD):
        store.read("proxy-a")


def test_corrupt_record_is_an_error(store):
    os.makedirs(store.path("proxy-a"))
    with open(os.path.join(store.path("proxy-a"), RECORD), "w", encoding="utf-8") as handle:
        handle.write("{not json")
    with pytest.raises(StoreError, match="cannot read"):
        store.read("proxy-a")


@pytest.fixture
def outside(tmp_path):
    path = tmp_path / "outside"
    path.write_text("root-only content\n")
    os.chmod(path, 0o600)
    return path


def test_store_read_never_follows_a_planted_record(tmp_path, outside):
    """Failed on dd934a7: the record was opened by path, so a link at instance.json (plantable
    by the Squid user in an old-layout directory) was followed and read as root."""
    store = Store(str(tmp_path / "state"), "127.200.3.0/28")
    store.create("proxy-a", "uid-a", "inst", 3128, {})
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"proxy-operator-managed": "true", "name": "forged"}))
    record = os.path.join(store.path("proxy-a"), RECORD)
    os.unlink(record)
    os.symlink(str(elsewhere), record)
    with pytest.raises(StoreError):
        store.read("proxy-a")


def test_store_refuses_an_instance_directory_that_is_a_link(tmp_path):
    store = Store(str(tmp_path / "state"), "127.200.4.0/28")
    store.create("proxy-a", "uid-a", "inst", 3128, {})
    os.symlink(store.path("proxy-a"), store.path("proxy-b"))
    with pytest.raises(StoreError, match="symbolic link"):
        store.read("proxy-b")
