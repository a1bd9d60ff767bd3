"""An upgrade from the last release keeps every instance (issue 29 §3).

The release is the commit ``changelogs/changelog.yaml`` calls 0.1.0, pinned here by its full id
and read from this checkout's own history (``git archive``; a shallow clone fails with a message
saying so). On a control plane of its own (the CRDs are cluster-wide: installing 0.1.0's on the
shared plane would change them under every other test), the release's CRDs and RBAC are
installed, and the release's controller (its package first on PYTHONPATH, its collection on
ANSIBLE_COLLECTIONS_PATH, this venv's packages: 0.1.0's requirements are a subset of this tree's)
makes Proxies Ready on the local provider (real Squid) and the kubernetes provider (kwok Pods).

Then the upgrade as docs/controller.md ("Upgrading") tells it: this tree's CRDs and RBAC are
applied, this tree's controller starts beside the old one (a Deployment's rolling update: it
stands by on the Lease), the old one gets SIGTERM and hands the Lease over. Checked:

- the CRDs: every version 0.1.0 stored is still served and is still the storage version (no
  stored object needs converting; the API server refuses, in a dry run, a CRD that would stop
  serving it, so such a change cannot be applied half way); the schema only grew (no property
  removed, no new constraint on an old one), and every stored spec is accepted by the new
  schema in a server-side dry-run create (ratcheting does not excuse a create);
- the backends: the same Squid processes (pid and start time) and instance directories, the same
  Pods and ConfigMaps (by UID);
- the new controller's own calls: after two poll rounds and an orphan GC round of each provider
  (minimum age 0), its metrics show no create and no delete, and GC kept every instance as live;
- the objects: the whole status (providerID, provider, state, ip, specHash, observedGeneration,
  every condition with its lastTransitionTime), the finalizer and the generation are what 0.1.0
  wrote; no Event but 0.1.0's, none counted again;
- then this tree's controller deletes each Proxy, and with it the instance 0.1.0 made.
"""

from __future__ import annotations

import copy
import io
import json
import os
import random
import re
import signal
import subprocess
import tarfile
import types

import pytest
import yaml
from cluster import kube_testlib
from cluster.kube_cluster import ControlPlane
from contract.local_backend import random_loopback_range
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from . import e2e_lib
from .e2e_lib import GROUP, PLURAL, VERSION, proxy_body

pytestmark = [pytest.mark.squid]

RELEASE = "0.1.0"
RELEASE_COMMIT = "6f5d42ca769b241d5c04ba91a36f4c5782fb1da9"
RELEASE_PATHS = ("galaxy.yml", "meta", "plugins", "controller")
# What each Proxy is made from: both providers, a port and an inline cloud-init (both in the
# spec hash, whose computation changed since the release).
PROXIES = {
    "local-a": {"provider": "local"},
    "local-b": {"provider": "local", "port": 3129, "cloudInit": {"inline": "#cloud-config\n"}},
    "pod-a": {"provider": "k8s"},
}
# kwok Pods run no Squid, so no probes (Ready means Running). The release polls a Running
# Proxy rarely (its runs would only delay its shutdown); this tree's every 3 s, and sweeps
# orphans with no minimum age (first 5 s after it leads, a sweep skipped until its providers
# file is validated, then every 15 s): an instance it did not count as live would go.
OLD_FLAGS = ["--running-poll", "60", "--probe-interval", "0"]
NEW_FLAGS = ["--running-poll", "3", "--probe-interval", "0", "--gc-interval", "15", "--gc-jitter", "0"]
NEW_FLAGS += ["--gc-min-age", "0", "--gc-own-installation"]


def _git(*args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["git", "-C", e2e_lib.ROOT, *args], stdout=stdout, stderr=subprocess.PIPE, check=False
    )


def release_tree(dest: str, release: str = RELEASE, commit: str = RELEASE_COMMIT) -> str:
    """``release``'s collection (made at ``commit``) as ``dest``/ansible_collections/crawl/
    egress_proxies (its controller package inside), beside this venv's kubernetes.core and
    ansible.posix; returns ``dest``."""
    shallow = _git("rev-parse", "--is-shallow-repository").stdout.decode().strip()
    assert shallow == "false", (
        "the upgrade test needs the history of %s to read release %s (%s); this checkout is "
        "shallow (rev-parse says %r): fetch it whole (git fetch --unshallow)"
        % (e2e_lib.ROOT, release, commit, shallow)
    )
    found = _git("cat-file", "-e", commit + "^{commit}")
    assert found.returncode == 0, "release %s's commit %s is not in %s's history: %s" % (
        release,
        commit,
        e2e_lib.ROOT,
        found.stderr.decode().strip(),
    )
    archive = _git("archive", "--format=tar", commit, *RELEASE_PATHS, "changelogs/changelog.yaml")
    assert archive.returncode == 0, archive.stderr.decode()
    collection = os.path.join(dest, "ansible_collections", "crawl", "egress_proxies")
    os.makedirs(collection)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(collection, filter="data")
    with open(os.path.join(collection, "galaxy.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle)["version"] == release
    with open(os.path.join(collection, "changelogs", "changelog.yaml"), encoding="utf-8") as handle:
        assert release in yaml.safe_load(handle)["releases"], "%s is not the %s release" % (
            commit,
            release,
        )
    ours = os.path.join(e2e_lib.ROOT, ".venv", "collections", "ansible_collections")
    for namespace in ("kubernetes", "ansible"):  # the collections the roles depend on
        os.symlink(os.path.join(ours, namespace), os.path.join(dest, "ansible_collections", namespace))
    return dest


def install(admin, config: str) -> None:
    """A tree's CRDs, the controller's namespace and its RBAC (the kubernetes provider's too)."""
    for doc in e2e_lib._docs(os.path.join(config, "crd")):
        e2e_lib._apply(admin, doc)
    e2e_lib._apply(
        admin, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": e2e_lib.CONTROLLER_NS}}
    )
    for sub in ("rbac", os.path.join("rbac", "kubernetes-provider")):
        for doc in e2e_lib._docs(os.path.join(config, sub)):
            e2e_lib._apply(admin, doc)


def installed_release(plane, tmp_path, release: str, commit: str) -> types.SimpleNamespace:
    """``release`` read from history and its CRDs and RBAC installed on ``plane``; a namespace, a
    controller kubeconfig and a providers document with a local provider (real Squid) for it.
    Returns root, collection, config, namespace, kubeconfig, state_dir and providers."""
    cluster, admin = plane
    root = release_tree(str(tmp_path / "release"), release, commit)
    collection = os.path.join(root, "ansible_collections", "crawl", "egress_proxies")
    config = os.path.join(collection, "controller", "config")
    install(admin, config)
    state_dir = str(tmp_path / "local-state")
    return types.SimpleNamespace(
        root=root,
        collection=collection,
        config=config,
        namespace=kube_testlib.create_namespace(admin),
        kubeconfig=e2e_lib.service_account_kubeconfig(
            admin, cluster, str(tmp_path / "controller.kubeconfig")
        ),
        state_dir=state_dir,
        providers={
            "installation": "upgrade-%08x" % random.SystemRandom().getrandbits(32),
            "providers": [
                {
                    "name": "local",
                    "type": "local",
                    "local": {"stateDir": state_dir, "addressRange": random_loopback_range()},
                }
            ],
        },
    )


def leave_nothing_running(controllers, state_dir: str) -> None:
    """Kill the controllers still running and every Squid of ``state_dir`` (a failed test's)."""
    for proc in controllers:
        if proc.proc is not None and proc.proc.poll() is None:
            proc.kill()
    from .test_e2e import _kill_squids

    _kill_squids(state_dir)


def controller_pair(release: types.SimpleNamespace, tmp_path) -> tuple:
    """(the release's, this tree's) controller processes for ``release`` (``installed_release``
    with its providers as they are now), on one Lease, not started."""
    lease = "lease-" + release.namespace
    pair = []
    for which in ("old", "new"):
        os.makedirs(tmp_path / which)
        pair.append(
            e2e_lib.ControllerProcess(
                str(tmp_path / which), release.kubeconfig, release.providers, release.namespace, lease
            )
        )
    return tuple(pair)


# The CRD schema: what a stored object must keep satisfying.

CONSTRAINTS = (
    "type",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
)


def _rules(schema: dict) -> set:
    return {r.get("rule") for r in schema.get("x-kubernetes-validations") or ()}


def schema_breaks(old: dict, new: dict, path: str = "") -> list:
    """Where ``new`` could refuse or prune an object ``old`` accepted (empty: it only grew)."""
    breaks = []
    for key in CONSTRAINTS:
        if key in new and new.get(key) != old.get(key):
            breaks.append("%s: %s %r -> %r" % (path or ".", key, old.get(key), new[key]))
    if "enum" in new and ("enum" not in old or not set(old["enum"]) <= set(new["enum"])):
        breaks.append("%s: enum %r -> %r" % (path or ".", old.get("enum"), new["enum"]))
    if not set(new.get("required") or ()) <= set(old.get("required") or ()):
        breaks.append(
            "%s: newly required %s"
            % (path or ".", sorted(set(new["required"]) - set(old.get("required") or ())))
        )
    if not _rules(new) <= _rules(old):
        breaks.append("%s: new validation rules %s" % (path or ".", sorted(_rules(new) - _rules(old))))
    if old.get("x-kubernetes-preserve-unknown-fields") and not new.get(
        "x-kubernetes-preserve-unknown-fields"
    ):
        breaks.append("%s: unknown fields now pruned" % (path or "."))
    for name, sub in (old.get("properties") or {}).items():
        if name not in (new.get("properties") or {}):
            breaks.append("%s.%s: removed" % (path, name))
        else:
            breaks.extend(schema_breaks(sub, new["properties"][name], "%s.%s" % (path, name)))
    for key in ("items", "additionalProperties"):
        if isinstance(old.get(key), dict) and isinstance(new.get(key), dict):
            breaks.extend(schema_breaks(old[key], new[key], "%s[%s]" % (path, key)))
    return breaks


BASE = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["provider"],
            "properties": {"provider": {"type": "string"}, "mode": {"type": "string", "enum": ["a", "b"]}},
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda s: s["properties"]["spec"]["properties"].update(auth={"type": "object"}), []),
        (lambda s: s["properties"]["spec"]["properties"]["mode"]["enum"].append("c"), []),
        (lambda s: s["properties"]["spec"]["properties"].pop("mode"), [".spec.mode: removed"]),
        (lambda s: s["properties"]["spec"]["required"].append("mode"), [".spec: newly required ['mode']"]),
        (
            lambda s: s["properties"]["spec"]["properties"]["mode"]["enum"].pop(),
            [".spec.mode: enum ['a', 'b'] -> ['a']"],
        ),
        (
            lambda s: s["properties"]["spec"]["properties"]["provider"].update(maxLength=3),
            [".spec.provider: maxLength None -> 3"],
        ),
        (
            lambda s: s["properties"]["spec"].update({"x-kubernetes-validations": [{"rule": "false"}]}),
            [".spec: new validation rules ['false']"],
        ),
        (
            lambda s: s["properties"]["status"].pop("x-kubernetes-preserve-unknown-fields"),
            [".status: unknown fields now pruned"],
        ),
    ],
    ids=["new-field", "enum-grows", "removed", "required", "enum-shrinks", "constraint", "rule", "pruned"],
)
def test_schema_breaks_names_what_a_stored_object_could_fail(change, expected):
    """The upgrade test's CRD guard: growth passes, every narrowing is named by its path."""
    new = copy.deepcopy(BASE)
    change(new)
    assert schema_breaks(BASE, new) == expected


def crd_file(config: str, plural: str) -> dict:
    with open(os.path.join(config, "crd", "crawl.example.com_%s.yaml" % plural), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def check_crds(
    admin, old_config: str, plurals=("proxies", "providerhealths"), release: str = RELEASE
) -> None:
    """Every CRD of the release: its stored versions still served and stored, its schema grown only."""
    ext = k8s.ApiextensionsV1Api(admin)
    for plural in plurals:
        old, new = crd_file(old_config, plural), crd_file(e2e_lib.CONFIG, plural)
        stored = ext.read_custom_resource_definition(old["metadata"]["name"]).status.stored_versions
        served = {v["name"]: v for v in new["spec"]["versions"] if v["served"]}
        assert set(stored) <= set(served), "%s: stored %s, new CRD serves %s" % (
            plural,
            stored,
            sorted(served),
        )
        old_storage = [v["name"] for v in old["spec"]["versions"] if v["storage"]]
        assert [v["name"] for v in new["spec"]["versions"] if v["storage"]] == old_storage
        for version in old["spec"]["versions"]:
            breaks = schema_breaks(
                version["schema"]["openAPIV3Schema"], served[version["name"]]["schema"]["openAPIV3Schema"]
            )
            assert breaks == [], "%s %s: the new schema refuses or prunes what %s stored: %s" % (
                plural,
                version["name"],
                release,
                breaks,
            )


def refuses_dropping_a_stored_version(admin) -> None:
    """The API server's guard the upgrade relies on: a CRD that stops serving a version its
    objects are stored in is refused (here in a dry run), so it is never applied half way."""
    ext = k8s.ApiextensionsV1Api(admin)
    crd = ext.read_custom_resource_definition("proxies.crawl.example.com")
    doc = admin.sanitize_for_serialization(crd)
    for version in doc["spec"]["versions"]:
        version["name"] = "v1alpha2"
    with pytest.raises(ApiException) as refused:
        ext.replace_custom_resource_definition(crd.metadata.name, doc, dry_run="All")
    assert refused.value.status == 422 and "storedVersions" in refused.value.body, refused.value.body


# The backends, read directly.


def squids(state_dir: str) -> dict:
    """instance name -> (pid, start time) of its live Squid, from the local provider's records."""
    out = {}
    instances = os.path.join(state_dir, "instances")
    for name in sorted(os.listdir(instances)):
        if name.startswith("."):
            continue
        with open(os.path.join(instances, name, "process.json"), encoding="utf-8") as handle:
            pid = json.load(handle)["pid"]
        try:
            with open("/proc/%d/stat" % pid, encoding="utf-8") as handle:
                start = handle.read().rsplit(")", 1)[1].split()[19]
        except FileNotFoundError:
            start = "dead"
        out[name] = (pid, start)
    return out


def pods_and_maps(admin, namespace: str) -> dict:
    core = k8s.CoreV1Api(admin)
    pods = {"pod/" + p.metadata.name: p.metadata.uid for p in core.list_namespaced_pod(namespace).items}
    maps = {
        "configmap/" + m.metadata.name: m.metadata.uid
        for m in core.list_namespaced_config_map(namespace).items
        if m.metadata.name != "kube-root-ca.crt"
    }
    return {**pods, **maps}


def metric_sum(text: str, name: str, **labels: str) -> float:
    """The sum of the samples of ``name`` (Prometheus text) whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith((name + "{", name + " ")):
            continue
        got = dict(re.findall(r'(\w+)="([^"]*)"', line[: line.rfind("}") + 1]))
        if all(got.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


class InstanceTouched(AssertionError):
    """The new controller created or deleted an instance (its metrics say so)."""


def polled_untouched(new, instances: dict, release: str) -> str:
    """Wait until the new controller ``new`` has polled every provider's ``instances`` (provider
    -> count) twice and its orphan GC kept each as live; fails at once when it created or
    deleted one. Returns its metrics page."""

    def polled_twice_and_collected():
        text = new.metrics()
        touched = {
            op: metric_sum(text, "egress_proxies_provider_operations_total", op=op)
            for op in ("create", "delete")
        }
        touched["gc-delete"] = metric_sum(text, "egress_proxies_gc_deleted_total")
        if any(touched.values()):  # fatal: no need to wait for the rounds
            raise InstanceTouched("this tree's controller changed %s's instances: %s" % (release, touched))
        return (
            all(
                metric_sum(text, "egress_proxies_gc_kept_total", provider=p, reason="live") >= n
                and metric_sum(text, "egress_proxies_provider_operations_total", provider=p, op="get")
                + metric_sum(text, "egress_proxies_provider_operations_total", provider=p, op="list")
                >= 2 * n
                for p, n in instances.items()
            )
            and text
        )

    try:
        text = kube_testlib.wait_for(
            "the new controller's two poll rounds and a GC sweep",
            polled_twice_and_collected,
            timeout=120,
            interval=0.5,
            fatal=(InstanceTouched,),
        )
    except AssertionError as exc:
        raise AssertionError("%s\n--- log ---\n%s" % (exc, new.tail())) from None
    kept = metric_sum(text, "egress_proxies_gc_kept_total")
    assert kept == metric_sum(text, "egress_proxies_gc_kept_total", reason="live"), text  # none for age
    return text


def released_controller_stopped(proc) -> None:
    """The released controller finished its shutdown on SIGTERM. Its exit status is 0, or SIGABRT
    after it logged ``stopped``: the released code can abort in the interpreter's finalization
    when a daemon thread (its informer's) still holds stderr's lock (CI saw 0.2.0's do it, in
    test_e2e_upgrade_auth.py); this tree stops that thread before it returns (__main__.py).
    Anything else, an abort before ``stopped`` included, fails."""
    code, tail = proc.stop(), proc.tail()
    finished = tail.rstrip().endswith("egress_proxies_controller stopped")
    assert code == 0 or (code == -signal.SIGABRT and finished), (code, tail)


def event_counts(admin, namespace: str) -> list:
    """(name, count) of every Event of ``namespace``: none new, none counted again."""
    return sorted(
        (e.metadata.name, e.count) for e in k8s.CoreV1Api(admin).list_namespaced_event(namespace).items
    )


def carried(obj: dict) -> dict:
    """What an upgrade must leave as it was: the whole status, the finalizer, the generation."""
    return {
        "status": obj.get("status"),
        "finalizers": obj["metadata"].get("finalizers"),
        "generation": obj["metadata"]["generation"],
    }


@pytest.fixture
def plane(tmp_path_factory):
    """A control plane of this test's own: 0.1.0's CRDs are cluster-wide."""
    plane = ControlPlane(str(tmp_path_factory.mktemp("upgrade-cluster")), die_with_parent=True)
    plane.start()
    try:
        yield plane, kube_testlib.api_client(plane.kubeconfig)
    finally:
        plane.stop()


def test_an_upgrade_from_the_last_release_keeps_every_instance(plane, tmp_path):
    _cluster, admin = plane
    release = installed_release(plane, tmp_path, RELEASE, RELEASE_COMMIT)
    old_root, old_collection, old_config = release.root, release.collection, release.config
    namespace, state_dir = release.namespace, release.state_dir
    custom = k8s.CustomObjectsApi(admin)
    release.providers["providers"].append(
        {"name": "k8s", "type": "kubernetes", "kubernetes": {"kubeconfig": release.kubeconfig}}
    )
    old, new = controller_pair(release, tmp_path)
    try:
        # Made before the release's controller starts: its first list holds all of them, so it
        # creates them in one run per provider (0.1.0 did not gather work that came one by one).
        for name, spec in PROXIES.items():
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, proxy_body(name, spec))
        old.start(extra_args=OLD_FLAGS, code=old_collection, collections=old_root)
        old.wait_ready()
        for name in PROXIES:
            e2e_lib.wait_condition(custom, namespace, name, "Ready", timeout=90, proc=old)
        # It really is the release that runs: 0.1.0 exported no build_info.
        assert "egress_proxies_controller_build_info" not in old.metrics()
        before = {o["metadata"]["name"]: carried(o) for o in e2e_lib.proxies(custom, namespace)}
        local_before, kube_before = squids(state_dir), pods_and_maps(admin, namespace)
        assert len(local_before) == 2 and all(start != "dead" for _pid, start in local_before.values())
        assert sorted(k.split("/")[0] for k in kube_before) == ["configmap", "pod"], kube_before
        events_before = event_counts(admin, namespace)

        # The upgrade: CRDs and RBAC first, then the new controller beside the old one, then the old one goes.
        check_crds(admin, old_config)
        install(admin, e2e_lib.CONFIG)
        refuses_dropping_a_stored_version(admin)
        for name, spec in PROXIES.items():
            body = proxy_body("dry-" + name, spec)
            custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body, dry_run="All")
        new.start(extra_args=NEW_FLAGS)
        new.wait_ready()
        # Both run, as in a rolling update: the new one stands by while the old one leads.
        assert "\negress_proxies_leader 0.0\n" in new.metrics()
        released_controller_stopped(old)

        polled_untouched(new, {"local": 2, "k8s": 1}, RELEASE)
        assert squids(state_dir) == local_before
        assert pods_and_maps(admin, namespace) == kube_before
        after = {o["metadata"]["name"]: carried(o) for o in e2e_lib.proxies(custom, namespace)}
        assert after == before
        assert event_counts(admin, namespace) == events_before

        # This tree's controller deletes what 0.1.0 made.
        for name in PROXIES:
            custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
        for name in PROXIES:
            e2e_lib.wait_proxy(custom, namespace, name, lambda o: o == "gone", name + " deleted", 60, new)
        assert squids(state_dir) == {}
        assert pods_and_maps(admin, namespace) == {}
        assert new.stop() == 0, new.tail()
    finally:
        leave_nothing_running((old, new), state_dir)
