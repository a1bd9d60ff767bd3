"""Leader election as client-go does it (issue 14), against an in-memory Lease API.

Expiry is judged by when this replica saw the record change, never by the remote renewTime
against the local clock (a holder whose clock is an hour behind still holds its Lease), and a
leader whose renewals hang stops leading at its renew deadline instead of waiting for the
hanging call to return.
"""

from __future__ import annotations

import datetime
import threading

import pytest
from egress_proxies_controller.kube import credentials
from egress_proxies_controller.kube.leader import LeaderElector
from kubernetes import client
from kubernetes.client.exceptions import ApiException


class LeaseApi:
    def __init__(self, holder: str, renew_time: datetime.datetime):
        self.lease = client.V1Lease(
            metadata=client.V1ObjectMeta(name="l", namespace="ns", resource_version="5"),
            spec=client.V1LeaseSpec(holder_identity=holder, lease_duration_seconds=15, renew_time=renew_time),
        )
        self.hang = threading.Event()  # set: every call blocks until released
        self.released = threading.Event()

    def _maybe_hang(self):
        if self.hang.is_set():
            self.released.wait(60)
            raise ApiException(status=500, reason="hung up")

    def read_namespaced_lease(self, name, namespace, **_kw):
        self._maybe_hang()
        return self.lease

    def replace_namespaced_lease(self, name, namespace, body, **_kw):
        self._maybe_hang()
        self.lease = body
        self.lease.metadata.resource_version = str(int(self.lease.metadata.resource_version) + 1)
        return self.lease

    def create_namespaced_lease(self, namespace, body, **_kw):
        raise ApiException(status=409, reason="exists")


def test_a_remote_renew_time_in_the_past_is_not_expiry():
    """The holder's clock is an hour behind ours; it renewed a moment ago (the record is new to
    us): comparing timestamps would steal its Lease."""
    an_hour_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(hours=1)
    api = LeaseApi("other", an_hour_ago)
    elector = LeaderElector(api, "ns", "l", "me")
    assert not elector._try()
    assert api.lease.spec.holder_identity == "other"


def test_an_unchanged_record_expires_after_the_lease_duration_of_local_time():
    now = [1000.0]
    api = LeaseApi("other", datetime.datetime.now(datetime.UTC))
    elector = LeaderElector(api, "ns", "l", "me", clock=lambda: now[0])
    assert not elector._try()
    now[0] += 14
    assert not elector._try()
    now[0] += 2  # 16 s without a change of the record, by our clock
    assert elector._try() and api.lease.spec.holder_identity == "me"


def test_a_hanging_renewal_loses_leadership_at_the_renew_deadline():
    api = LeaseApi("", None)
    elector = LeaderElector(api, "ns", "l", "me", lease_duration=3, renew_deadline=1, retry_period=0.2)
    stop = threading.Event()
    assert elector.acquire(stop)
    lost = threading.Event()
    api.hang.set()  # from now on every renewal hangs for a minute
    elector.keep(stop, lost.set)
    try:
        assert lost.wait(30), "leadership was kept while renewals hung"
        assert not elector.is_leader.is_set()
    finally:
        stop.set()
        api.released.set()


class RefusingLeaseApi(LeaseApi):
    """The API server's answer to a token it no longer accepts, from ``refuse`` on."""

    def __init__(self):
        super().__init__("", None)
        self.refuse = threading.Event()

    def read_namespaced_lease(self, name, namespace, **_kw):
        if self.refuse.is_set():
            raise ApiException(status=401, reason="Unauthorized")
        return super().read_namespaced_lease(name, namespace)


def test_refused_credentials_end_the_wait_for_the_lease():
    """Issue 40 §6: a standby retried a 401 every retry period, forever."""
    api = RefusingLeaseApi()
    api.refuse.set()
    elector = LeaderElector(api, "ns", "l", "me", lease_duration=3, renew_deadline=1, retry_period=0.2)
    with pytest.raises(credentials.CredentialsRefused):
        elector.acquire(threading.Event())


def test_refused_credentials_lose_leadership_at_once():
    """A leader whose renewal is refused (401) stops leading at the next renewal, not at the
    renew deadline: no renewal can succeed."""
    api = RefusingLeaseApi()
    elector = LeaderElector(api, "ns", "l", "me", lease_duration=30, renew_deadline=20, retry_period=0.2)
    stop = threading.Event()
    assert elector.acquire(stop)
    lost = threading.Event()
    elector.keep(stop, lost.set)
    try:
        api.refuse.set()
        assert lost.wait(5), "leadership was kept after the API server refused the credentials"
        assert not elector.leading()
    finally:
        stop.set()
