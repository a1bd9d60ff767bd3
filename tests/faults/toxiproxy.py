"""A small typed client for Toxiproxy's HTTP API (the server of tests/faults/toxiproxy_server.py).

Only what the matrix uses: create a proxy in front of a backend, switch it off and on ("down":
connections refused), and add or remove toxics. Toxic attributes follow Toxiproxy's README:
latency (ms), timeout (ms, 0 = black hole), bandwidth (KB/s), reset_peer (ms), slicer
(average_size and size_variation in bytes, delay in microseconds), limit_data (bytes).
"""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.error
import urllib.request

#: the toxic types the matrix injects, with the attributes each takes
TOXIC_TYPES = ("latency", "timeout", "bandwidth", "reset_peer", "slicer", "limit_data", "slow_close")


class ToxiproxyError(RuntimeError):
    """Toxiproxy's API refused a request (the message carries its status and body)."""

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


@dataclasses.dataclass(frozen=True)
class Toxic:
    name: str
    type: str
    stream: str = "downstream"  # downstream: backend -> client; upstream: client -> backend
    toxicity: float = 1.0
    attributes: dict = dataclasses.field(default_factory=dict)

    def body(self) -> dict:
        if self.type not in TOXIC_TYPES:
            raise ValueError("unknown toxic type %r (known: %s)" % (self.type, ", ".join(TOXIC_TYPES)))
        return {
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
            "attributes": self.attributes,
        }


REMOVE_TIMEOUT = 60.0
#: how long a removal may take in all. Toxiproxy's API gives up on a request after 25 s
#: (http.TimeoutHandler: 503 "Timeout") while the removal goes on holding the proxy's toxic
#: lock until every link has let the toxic go; behind a 1-3 s latency toxic that took longer
#: than 25 s once in CI (net-latency-jitter-kubernetes).
REMOVE_DEADLINE = 180.0
#: the status of Toxiproxy's API timeout (the removal goes on in the server)
API_TIMEOUT_STATUS = 503


@dataclasses.dataclass
class Proxy:
    """One proxy: clients dial ``listen`` (``127.0.0.1:port``), it forwards to ``upstream``."""

    api: Toxiproxy
    name: str
    listen: str
    upstream: str

    @property
    def port(self) -> int:
        return int(self.listen.rsplit(":", 1)[1])

    def set_enabled(self, enabled: bool) -> None:
        """Disabled: the listener is closed (new dials refused) and open connections dropped."""
        self.api.call("POST", "/proxies/" + self.name, {"enabled": enabled})

    def add(self, toxic: Toxic) -> None:
        self.api.call("POST", "/proxies/%s/toxics" % self.name, toxic.body())

    def remove(self, toxic_name: str) -> None:
        """Removed for sure when this returns. Toxiproxy answers only once the toxic's streams
        have drained (behind a latency toxic on the sshd link that took over 10 s); past its API
        timeout it answers 503 and goes on removing, so this waits until the list no longer
        names the toxic (the list waits on the same lock, so it may answer 503 too)."""
        path = "/proxies/%s/toxics/%s" % (self.name, toxic_name)
        deleted = _unless_api_timeout(lambda: self.api.call("DELETE", path, timeout=REMOVE_TIMEOUT))[0]
        if deleted:
            return
        end = time.monotonic() + REMOVE_DEADLINE
        while True:
            listed, names = _unless_api_timeout(self.toxics)
            if listed and toxic_name not in names:
                return
            if time.monotonic() > end:
                raise ToxiproxyError(
                    "toxic %s of proxy %s still present %.0f s after its removal began"
                    % (toxic_name, self.name, REMOVE_DEADLINE)
                )
            time.sleep(1.0)

    def listed(self) -> list:
        """The proxy's toxics as Toxiproxy describes them (name, type, attributes)."""
        return self.api.call("GET", "/proxies/%s/toxics" % self.name, timeout=REMOVE_TIMEOUT)

    def toxics(self) -> list:
        return [t["name"] for t in self.listed()]

    def heal(self) -> None:
        """Every toxic removed and the proxy enabled: the link is clean again. Open connections
        are dropped first: Toxiproxy removes a toxic only once its streams move, which an idle
        keep-alive connection (the Kubernetes client's) may never do.

        Between the two, the links get time to die (``settle_seconds``). A connection closed
        while a toxic still holds a chunk for it kills the link's writer when that chunk comes
        out; the writer then waits for the toxic lock to unregister its link. A removal that
        takes the lock first interrupts that link's toxic, which is blocked handing its next
        chunk to the dead writer: Toxiproxy 2.12 deadlocks there for good (seen in CI with a
        1-byte slicer behind a probe that reads only the status line)."""
        present = self.listed()
        self.set_enabled(False)
        if present:
            time.sleep(settle_seconds(present))
        for toxic in present:
            self.remove(toxic["name"])
        for name in self.toxics():  # one added meanwhile
            self.remove(name)
        self.set_enabled(True)


#: what a link needs, past the longest a toxic holds a chunk, to see its closed connection
SETTLE_MARGIN = 0.5
#: the bandwidth toxic hands its chunk on in 100 ms slices (toxics/bandwidth.go)
BANDWIDTH_SLICE_SECONDS = 0.1


def settle_seconds(toxics: list) -> float:
    """The longest any of ``toxics`` (Toxiproxy's descriptions) holds a chunk, plus a margin."""
    held = [0.0]
    for toxic in toxics:
        attributes = toxic.get("attributes") or {}
        if toxic.get("type") == "latency":
            held.append((attributes.get("latency", 0) + attributes.get("jitter", 0)) / 1000.0)
        elif toxic.get("type") == "slicer":
            held.append(attributes.get("delay", 0) / 1e6)
        elif toxic.get("type") == "bandwidth":
            held.append(BANDWIDTH_SLICE_SECONDS)
    return max(held) + SETTLE_MARGIN


def _unless_api_timeout(call) -> tuple:
    """(True, what ``call`` returned), or (False, None) when Toxiproxy's API gave up on the
    request (503) while the work goes on in the server; any other refusal raises."""
    try:
        return True, call()
    except ToxiproxyError as exc:
        if exc.status != API_TIMEOUT_STATUS:
            raise
        return False, None


class Toxiproxy:
    def __init__(self, api_url: str, timeout: float = 10.0):
        self.api_url = api_url.rstrip("/")
        self.timeout = timeout

    def call(self, method: str, path: str, body: dict | None = None, timeout: float | None = None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.api_url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            message = "%s %s: %d %s" % (method, path, exc.code, exc.read()[:300])
            raise ToxiproxyError(message, exc.code) from exc
        return json.loads(text) if text.strip() else None

    def version(self) -> str:
        request = urllib.request.Request(self.api_url + "/version")
        with urllib.request.urlopen(request, timeout=self.timeout) as answer:
            return answer.read().decode().strip()

    def create(self, name: str, upstream: str) -> Proxy:
        """A proxy on a free loopback port (Toxiproxy binds port 0 and reports the port)."""
        answer = self.call("POST", "/proxies", {"name": name, "listen": "127.0.0.1:0", "upstream": upstream})
        return Proxy(self, name, answer["listen"], answer["upstream"])

    def delete(self, name: str) -> None:
        self.call("DELETE", "/proxies/" + name)
