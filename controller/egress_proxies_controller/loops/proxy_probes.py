"""The proxy health engine: probes every Running Proxy and records what it saw; it writes nothing.

A probe is a TCP connect to ip:port and, when a probe URL is configured, an HTTP GET of that URL
through the proxy; the result is ``Healthy`` (reasons ``Reachable``, ``ConnectionRefused``,
``Timeout``, ``ProxyError``, and ``ProxyAuthRequired`` for a 407: a Proxy with ``spec.auth`` is
probed with its Secret's credentials, read once per round, so a 407 means they were refused or
could not be read, and ``AuthNotEnforced`` when the same GET without credentials is served
instead of answered 407: a proxy whose configuration ignored its auth turns not Ready at its
first probe) and a latency histogram. Probes run concurrently with a bound, so a round of 1000
proxies fits in one interval on two cores (bench/probe_round.py).
Each result is recorded in the ``HealthObservations`` the manager reads (health_observations.py),
with the instance it probed; a key is queued only when its verdict changed and differs from what
status says, so a round over 1000 healthy proxies queues none. The reconcile of that key writes
``Healthy`` and ``Ready`` (Running and Healthy) and, for an unhealthy proxy, reads the instance
at once (a dead Squid reads as Stopped and is recreated): one writer of ``Ready``.
"""

from __future__ import annotations

import base64
import concurrent.futures
import dataclasses
import logging
import socket
import time
import urllib.parse

from .. import api
from ..kube import conditions
from ..proxy import auth_secret
from ..proxy.health_observations import HealthObservations, Observation
from .periodic import PeriodicLoop

log = logging.getLogger("egress_proxies_controller.loops.proxy_probes")
COND_HEALTHY = api.COND_HEALTHY
REASON_AUTH_REQUIRED = "ProxyAuthRequired"
REASON_AUTH_NOT_ENFORCED = "AuthNotEnforced"
#: bytes read for the status line before the answer counts as malformed
MAX_STATUS_LINE = 4096


@dataclasses.dataclass(frozen=True)
class ProbeResult:
    healthy: bool
    reason: str
    message: str
    seconds: float


def basic_header(credentials: dict) -> str:
    token = ("%s:%s" % (credentials["username"], credentials["password"])).encode("utf-8")
    return "Basic " + base64.b64encode(token).decode("ascii")


def probe(ip: str, port: int, timeout: float, url: str = "", authorization: str = "") -> ProbeResult:
    """TCP connect, then (with ``url``) one GET through the proxy, sending ``authorization`` as
    ``Proxy-Authorization`` when given; never raises, and never puts the header in a message.

    ``timeout`` bounds the whole probe, not each socket operation: a link that drips its answer
    a byte at a time would otherwise hold a probe (and its round) for minutes."""
    started = time.monotonic()
    deadline = started + timeout
    try:
        with socket.create_connection((ip, port), timeout=timeout):
            pass
    except ConnectionRefusedError:
        return ProbeResult(
            False,
            "ConnectionRefused",
            "%s:%d refused the connection" % (ip, port),
            time.monotonic() - started,
        )
    except TimeoutError:
        return ProbeResult(
            False,
            "Timeout",
            "no TCP answer from %s:%d within %gs" % (ip, port, timeout),
            time.monotonic() - started,
        )
    except OSError as exc:
        return ProbeResult(False, "Unreachable", "%s:%d: %s" % (ip, port, exc), time.monotonic() - started)
    if url:
        status = _get(ip, port, deadline, url, authorization, started)
        if isinstance(status, ProbeResult):
            return status
        if status == 407:
            why = "refused the credentials" if authorization else "asks for credentials and none were sent"
            return ProbeResult(
                False,
                REASON_AUTH_REQUIRED,
                "GET %s through the proxy answered 407: the proxy %s" % (url, why),
                time.monotonic() - started,
            )
        if status >= 400:
            return ProbeResult(
                False,
                "ProxyError",
                "GET %s through the proxy answered %d" % (url, status),
                time.monotonic() - started,
            )
        if authorization:
            # Auth must be enforced, not only accepted: a proxy whose configuration ignored it
            # (a guest's own Squid rules, docs/auth.md) would serve anyone in its ranges.
            bare = _get(ip, port, deadline, url, "", started)
            if isinstance(bare, ProbeResult):
                return bare
            if bare != 407:
                return ProbeResult(
                    False,
                    REASON_AUTH_NOT_ENFORCED,
                    "GET %s through the proxy without credentials answered %d, not 407: the proxy "
                    "does not enforce its authentication" % (url, bare),
                    time.monotonic() - started,
                )
    return ProbeResult(
        True, "Reachable", "the proxy answers at %s:%d" % (ip, port), time.monotonic() - started
    )


def _request(url: str, authorization: str) -> bytes:
    host = urllib.parse.urlsplit(url).netloc
    lines = ["GET %s HTTP/1.1" % url, "Host: %s" % host, "User-Agent: egress-proxies-probe"]
    if authorization:
        lines.append("Proxy-Authorization: %s" % authorization)
    lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _status_line(sock: socket.socket, deadline: float) -> bytes:
    """The answer's first line, each read given only what is left of ``deadline``."""
    data = b""
    while b"\r\n" not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        sock.settimeout(left)
        chunk = sock.recv(MAX_STATUS_LINE)
        if not chunk:
            raise ConnectionError("connection closed before a status line")
        data += chunk
        if len(data) > MAX_STATUS_LINE and b"\r\n" not in data:
            raise ValueError("no status line in the first %d bytes" % MAX_STATUS_LINE)
    return data.split(b"\r\n", 1)[0]


def _get(ip: str, port: int, deadline: float, url: str, authorization: str, started: float):
    """The status of one GET of ``url`` through the proxy (only its status line is read), or
    the unhealthy ProbeResult of a failure to get one by ``deadline``."""
    try:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("deadline passed")
        with socket.create_connection((ip, port), timeout=left) as sock:
            sock.sendall(_request(url, authorization))
            line = _status_line(sock, deadline)
        parts = line.split()
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise ValueError("not an HTTP status line: %r" % line[:80])
        return int(parts[1])
    except TimeoutError:
        return ProbeResult(
            False, "Timeout", "GET %s through the proxy timed out" % url, time.monotonic() - started
        )
    except (OSError, ValueError) as exc:
        return ProbeResult(
            False,
            "ProxyError",
            "GET %s through the proxy failed: %s" % (url, exc),
            time.monotonic() - started,
        )


def _instance(obj: dict) -> tuple | None:
    """What an observation of ``obj`` names, (uid, providerID, ip, port); None unless Running."""
    status = obj.get("status") or {}
    if status.get("state") != "Running" or not status.get("ip"):
        return None
    port = int((obj.get("spec") or {}).get("port") or 3128)
    return ((obj.get("metadata") or {}).get("uid") or "", status.get("providerID") or "", status["ip"], port)


class ProxyHealthEngine(PeriodicLoop):
    name = "proxy-health"

    def __init__(
        self,
        informer,
        kube,
        queue,
        observations: HealthObservations,
        metrics,
        *,
        interval: float,
        timeout: float,
        concurrency: int,
        url: str = "",
        owns=None,
    ):
        super().__init__(interval, 0.0, initial_delay=min(interval, 2.0))
        self.informer, self.kube, self.queue, self.metrics = informer, kube, queue, metrics
        self.observations = observations
        self.timeout, self.concurrency, self.url = timeout, concurrency, url
        self.last_round_seconds = 0.0
        self.owns = owns  # with --shards: probe only the Proxies of the shards held here

    def targets(self) -> list:
        """``(key, instance, Secret name)`` of every Running Proxy; ``instance`` is what an
        observation names: (uid, providerID, ip, port)."""
        out = []
        for key in self.informer.cache_keys():
            obj = self.informer.get(key)
            if (
                (self.owns is not None and not self.owns(key))
                or obj is None
                or (obj.get("metadata") or {}).get("deletionTimestamp")
            ):
                continue
            instance = _instance(obj)
            if instance is not None:
                auth = (obj.get("spec") or {}).get("auth") or {}
                out.append((key, instance, (auth.get("secretRef") or {}).get("name") or ""))
        return out

    def _authorizations(self, targets: list) -> dict:
        """``{(namespace, secret): header}`` for this round, each Secret read once (only with a
        probe URL: a TCP connect needs no credentials). An unreadable one is left out: its
        probe then gets the 407 that reports it."""
        out = {}
        if not self.url:
            return out
        for key, _instance, secret in targets:
            ref = (key.split("/", 1)[0], secret)
            if not secret or ref in out:
                continue
            try:
                out[ref] = basic_header(auth_secret.credentials(self.kube, *ref))
            except LookupError as exc:
                log.info("probe of %s without credentials: %s", key, exc)
                out[ref] = ""
        return out

    def round(self) -> None:
        targets = self.targets()
        started = time.monotonic()
        headers = self._authorizations(targets)

        def one(target):
            key, instance, secret = target
            header = headers.get((key.split("/", 1)[0], secret), "") if secret else ""
            _uid, _provider_id, ip, port = instance
            return probe(ip, port, self.timeout, self.url, header)

        with concurrent.futures.ThreadPoolExecutor(
            max(1, min(self.concurrency, len(targets) or 1)), thread_name_prefix="probe"
        ) as pool:
            results = list(pool.map(one, targets))
        self.last_round_seconds = time.monotonic() - started
        self.metrics.probe_round_seconds.set(self.last_round_seconds)
        self.observations.retain(key for key, _instance, _secret in targets)
        for (key, instance, _secret), result in zip(targets, results, strict=True):
            self.metrics.probe_seconds.labels("healthy" if result.healthy else "unhealthy").observe(
                result.seconds
            )
            self._record(key, Observation(*instance, result.healthy, result.reason, result.message))

    def _record(self, key: str, observation: Observation) -> None:
        """Keep the observation; queue the key once when its verdict changed and status says
        otherwise (no reconcile while nothing changes, none after a restart for the same verdict).
        A result about an instance the Proxy no longer names (it stopped while probed) is dropped."""
        obj = self.informer.get(key) or {}
        if _instance(obj) != observation.instance or not self.observations.record(key, observation):
            return
        healthy = conditions.find((obj.get("status") or {}).get("conditions"), COND_HEALTHY) or {}
        if (healthy.get("status"), healthy.get("reason")) == observation.verdict():
            return
        if not observation.healthy:
            log.info("proxy %s unhealthy: %s", key, observation.message)
        self.queue.add(key)  # its reconcile writes Healthy and Ready, and reads the instance
