"""The fields a run's creates need are resolved before the run, and each Secret a group names
is read once: a Running Proxy with auth is polled as a create (its module syncs the
credentials), so a poll round of N Proxies sharing one auth Secret read it N times (406ae04);
now one ``get`` per Secret per round, the same answer for every item that names it, and the
next round reads it again."""

from __future__ import annotations

from egress_proxies_controller.proxy import run_inputs
from egress_proxies_controller.proxy.model import Action
from egress_proxies_controller.proxy.reconciler import CREATE, GET

from .test_reconciler import obj

SENTINEL = "Sentinel-run-inputs-pw"


class CountingKube:
    """Answers every Secret read from ``secrets`` (name -> values, or an exception) and counts."""

    def __init__(self, secrets: dict):
        self.secrets, self.reads = secrets, []

    def secret_values(self, namespace, name, keys, what="cloud-init"):
        self.reads.append((namespace, name))
        found = self.secrets.get(name, LookupError("%s Secret %s/%s: Not Found" % (what, namespace, name)))
        if isinstance(found, Exception):
            raise found
        return {key: found[key] for key in keys}


def group(*secret_names: str, op: str = CREATE) -> dict:
    out = {}
    for i, name in enumerate(secret_names):
        proxy = obj(
            metadata__name="p%d" % i, metadata__uid="uid-%d" % i, spec__auth={"secretRef": {"name": name}}
        )
        out["ns/p%d" % i] = (Action(op=op, phase="poll", provider="local"), proxy)
    return out


def test_a_round_of_proxies_sharing_one_secret_reads_it_once():
    kube = CountingKube({"creds": {"username": "crawler", "password": SENTINEL}})
    resolved = run_inputs.resolve(kube, group(*["creds"] * 50))
    assert kube.reads == [("ns", "creds")]
    assert len(resolved) == 50
    assert all(f["auth"] == {"username": "crawler", "password": SENTINEL} for f in resolved.values())
    run_inputs.resolve(kube, group(*["creds"] * 50))
    assert len(kube.reads) == 2, "the next round reads it again: a changed Secret is seen as soon"


def test_each_secret_is_read_once_and_a_missing_one_fails_only_its_items():
    kube = CountingKube(
        {"a": {"username": "u-a", "password": SENTINEL}, "b": {"username": "u-b", "password": "pw-b"}}
    )
    resolved = run_inputs.resolve(kube, group("a", "b", "gone", "a", "gone", "b"))
    assert sorted(kube.reads) == [("ns", "a"), ("ns", "b"), ("ns", "gone")]
    failed = {k for k, v in resolved.items() if isinstance(v, LookupError)}
    assert failed == {"ns/p2", "ns/p4"}
    assert all("auth Secret ns/gone" in str(resolved[k]) and SENTINEL not in str(resolved[k]) for k in failed)
    assert resolved["ns/p3"]["auth"]["username"] == "u-a" and resolved["ns/p5"]["auth"]["username"] == "u-b"


def test_a_read_that_times_out_fails_every_item_naming_it_alike():
    kube = CountingKube({"creds": TimeoutError("read timed out")})
    resolved = run_inputs.resolve(kube, group("creds", "creds", "creds"))
    assert kube.reads == [("ns", "creds")]
    assert {str(v) for v in resolved.values()} == {"auth Secret ns/creds: TimeoutError"}


def test_only_creates_read_anything():
    kube = CountingKube({"creds": {"username": "crawler", "password": SENTINEL}})
    assert run_inputs.resolve(kube, group("creds", op=GET)) == {} and kube.reads == []
