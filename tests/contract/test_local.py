"""The conformance suite for the ``local`` provider against real Squid, plus what only a local
Squid can show: it really proxies, it serves only its allowed sources, a suspended Squid is
resumed by create, and a reused pid is never mistaken for (or killed as) an instance's Squid."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import socket
import subprocess
import threading
import time
import uuid

import pytest
from proxy_traffic import fetch_via

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import listening, process
from contract import local_fixtures
from contract.suite import ContractSuite, cleanup, dl, wait_for_state

pytestmark = pytest.mark.squid
backend, origin = local_fixtures.backend, local_fixtures.origin  # the shared fixtures


class TestLocalContract(ContractSuite):
    """Every contract rule, against real Squid processes."""


def test_instance_proxies_http_and_serves_only_allowed_sources(backend, origin):
    provider = backend.build(allowed_source_ranges=["127.0.0.2/32"])
    req = backend.request(str(uuid.uuid4()))
    with cleanup(backend) as ids:
        provider_id = provider.create(req, dl(backend))
        ids.append(provider_id)
        running = wait_for_state(backend, provider_id, (contract.RUNNING,))[-1]
        assert running.ip in {str(h) for h in ipaddress.ip_network(backend.address_range)}
        with open(os.path.join(backend.instance_dir(provider_id), process.CONF), encoding="utf-8") as fh:
            conf = fh.read()
        assert "http_access allow all" not in conf.splitlines()
        assert "http_access deny all" in conf.splitlines()
        assert "127.0.0.2/32" in conf
        status, body = fetch_via(running.ip, req.port, origin, source="127.0.0.2")
        assert (status, body) == (200, "hello /via-proxy")
        status, body = fetch_via(running.ip, req.port, origin, source="127.0.0.3")
        assert status == 403, body


def test_create_resumes_a_suspended_squid(backend):
    req = backend.request(str(uuid.uuid4()))
    with cleanup(backend) as ids:
        provider_id = backend.provider.create(req, dl(backend))
        ids.append(provider_id)
        wait_for_state(backend, provider_id, (contract.RUNNING,))
        backend.force_unknown_state(provider_id)
        assert backend.provider.get(provider_id, dl(backend)).state == contract.STOPPED
        assert backend.provider.create(req, dl(backend)) == provider_id
        wait_for_state(backend, provider_id, (contract.RUNNING,))


def test_reused_pid_is_neither_reported_nor_killed(backend):
    req = backend.request(str(uuid.uuid4()))
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        with cleanup(backend) as ids:
            provider_id = backend.provider.create(req, dl(backend))
            ids.append(provider_id)
            directory = backend.instance_dir(provider_id)
            wait_for_state(backend, provider_id, (contract.RUNNING,))
            state, squid_pid = process.status(directory)
            assert state == process.ALIVE
            os.kill(squid_pid, signal.SIGKILL)
            process._children.pop(squid_pid).wait(5)
            # The pid now names another live process, with its own real start time.
            record = {"pid": stranger.pid, "startTicks": process._proc_stat(stranger.pid)[1]}
            with open(os.path.join(directory, process.PROCESS_RECORD), "w", encoding="utf-8") as fh:
                fh.write(json.dumps(record))
            assert backend.provider.get(provider_id, dl(backend)).state == contract.STOPPED
            backend.provider.delete(provider_id, dl(backend))
            assert stranger.poll() is None, "delete killed a process that was not its Squid"
    finally:
        with contextlib.suppress(ProcessLookupError):
            stranger.kill()
        stranger.wait(5)


def test_squid_carries_none_of_the_callers_environment(backend, monkeypatch):
    """A Squid outlives the module process that started it: it must not inherit that process's
    environment, where a controller's run mark (``EGRESS_PROXIES_RUN``, by which a timed-out
    run's processes are swept) would get a live proxy killed and credentials the caller holds
    would sit in a daemon's /proc/<pid>/environ."""
    sentinel = "SENTINEL-" + uuid.uuid4().hex
    monkeypatch.setenv("EGRESS_PROXIES_RUN", "run-" + sentinel)
    monkeypatch.setenv("SOME_CLOUD_TOKEN", sentinel)
    with cleanup(backend) as ids:
        ids.append(backend.provider.create(backend.request(str(uuid.uuid4())), dl(backend)))
        wait_for_state(backend, ids[0], (contract.RUNNING,))
        (pid,) = backend.squid_pids()
        with open("/proc/%d/environ" % pid, "rb") as handle:
            environ = handle.read().decode("utf-8", "replace")
        assert sentinel not in environ
        assert "PATH=" in environ  # Squid still finds its helpers


@contextlib.contextmanager
def _squatter(address: str, port: int):
    """Another process's socket listening (and accepting) on ``address:port``; yields its pid."""
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    squatter.bind((address, port))
    squatter.listen(16)
    accepting = threading.Event()

    def accept():
        while not accepting.is_set():
            with contextlib.suppress(OSError):
                conn, _peer = squatter.accept()
                conn.close()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield os.getpid()
    finally:
        accepting.set()
        with contextlib.suppress(OSError):
            squatter.shutdown(socket.SHUT_RDWR)  # wakes the accept: only then is the port let go
        squatter.close()


def test_running_only_when_its_own_squid_listens(backend, monkeypatch):
    """Issue 15: another process on the instance's address and port (a second provider with an
    overlapping range, anything else) answered the connect check, and the instance read Running
    while its own Squid had failed to bind. Running needs the listening socket to be its own.
    Create now refuses a taken address first (the next test), so the socket is taken here as
    if in the moment between that check and Squid's bind: the check is told it is free."""
    monkeypatch.setattr(listening, "holder", lambda address, port: "")
    req = backend.request(str(uuid.uuid4()))
    first = str(next(ipaddress.ip_network(backend.address_range).hosts()))  # what create allocates
    with cleanup(backend) as ids, _squatter(first, req.port):
        provider_id = backend.provider.create(req, dl(backend))
        ids.append(provider_id)
        states = set()
        for _attempt in range(20):
            states.add(backend.provider.get(provider_id, dl(backend)).state)
            time.sleep(0.2)
        assert contract.RUNNING not in states, "another process's socket proved nothing"


def test_a_taken_address_is_named_with_who_holds_it_and_what_to_do(backend):
    """Issue 40 §6: Squid could not bind, died, and the instance read Stopped (a wait: Transient
    "did not reach Running") with "Address already in use" only in its cache.log. Create now
    says which address:port, held by whom, and what to do, with reason AddressInUse; once the
    other process lets go, the same create starts Squid there."""
    req = backend.request(str(uuid.uuid4()))
    first = str(next(ipaddress.ip_network(backend.address_range).hosts()))  # what create allocates
    where = "%s:%d" % (first, req.port)
    with cleanup(backend) as ids:
        ids.append("local/" + req.name)
        with _squatter(first, req.port) as pid:
            for _attempt in range(2):  # the first create, then the restart a later create tries
                with pytest.raises(errors.ProviderError) as refused:
                    backend.provider.create(req, dl(backend))
                err = refused.value
                assert (err.error_class, err.reason) == (errors.TRANSIENT, errors.REASON_ADDRESS_IN_USE)
                assert "address %s is in use by pid %d (" % (where, pid) in str(err), str(err)
                assert "stop that process" in str(err), str(err)
            assert backend.squid_pids() == []
        provider_id = backend.provider.create(req, dl(backend))
        assert wait_for_state(backend, provider_id, (contract.RUNNING,))[-1].ip == first
