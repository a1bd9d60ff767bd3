"""docs/controller.md, docs/pools.md and docs/kubernetes-provider.md against the test control
plane, taken from the Markdown at test time (issue 37).

Run: the remote install command and the user's overlay of the remote base (``kubectl apply -k``
with a server-side dry run: showing the install, not running the controller), and the kubernetes
provider's providers file, whose ``proxy_check`` reaches the API server. Checked only (their
markers say why): the OpenTelemetry ``env`` inside the install's Deployment and the crawler's Pod
spec, each by the API server's strict dry run.

Only what cannot be used as written is rewritten, as the tests say: ``https://<repo>`` becomes
``file://`` and a bare repository holding this checkout's HEAD, ``<tag>`` a tag in it at HEAD
(named after the version: the tree at a tag is what a release is), ``--dry-run=server -o yaml``
is added to ``kubectl apply``, and the kubeconfig path ``/etc/egress/kubeconfig`` becomes a
scratch copy of the test cluster's admin kubeconfig whose context is the documented ``prod-eu``.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import yaml
from cluster import kube_testlib
from controller.test_installed_controller import kubectl
from integration.playbook import run_playbook
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient

from controller import kustomize_render

from .markdown_blocks import ROOT, blocks

pytestmark = [pytest.mark.playbook]
CONTROLLER_NS = "egress-proxies-system"
SERVICE_MONITOR_CRD = os.path.join(
    ROOT, "tests", "controller", "crds", "servicemonitors.monitoring.coreos.com.yaml"
)


def _one(path: str, needle: str):
    found = [b for b in blocks(path) if needle in b.text]
    assert len(found) == 1, "%s: %d blocks contain %r" % (path, len(found), needle)
    return found[0]


def _version() -> str:
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["version"]


def _ensure_namespace(admin, name: str) -> None:
    try:
        k8s.CoreV1Api(admin).create_namespace({"metadata": {"name": name}})
    except k8s.ApiException as exc:
        if exc.status != 409:
            raise


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> dict:
    """What ``https://<repo>`` and ``<tag>`` stand for: a bare repository with this checkout's
    HEAD under the version's tag (uncommitted changes are not in it, as in any release)."""
    repo = tmp_path_factory.mktemp("i37-run-a-remote") / "egress-proxies.git"
    for argv in (
        ["git", "init", "-q", "--bare", str(repo)],
        ["git", "-C", ROOT, "push", "-q", str(repo), "HEAD:refs/tags/%s" % _version()],
    ):
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, "%s: %s" % (argv, proc.stderr)
    return {"https://<repo>": "file://%s" % repo, "<tag>": _version()}


@pytest.fixture(scope="module")
def cluster(kube_cluster, kube_admin) -> dict:
    """The environment kubectl runs in: the test cluster's admin, the namespace the install's
    objects go to (a dry run of them needs it to exist) and the ServiceMonitor CRD."""
    _ensure_namespace(kube_admin, CONTROLLER_NS)
    for name in ("crawl.example.com_proxies.yaml", "crawl.example.com_proxypools.yaml"):
        kube_testlib.apply_proxy_crd(kube_admin, os.path.join(ROOT, "controller", "config", "crd", name))
    kube_testlib.apply_proxy_crd(kube_admin, SERVICE_MONITOR_CRD)
    binary = kubectl()
    return dict(
        os.environ,
        KUBECONFIG=kube_cluster.kubeconfig,
        PATH=os.path.dirname(binary) + os.pathsep + os.environ["PATH"],
    )


def _substitute(text: str, remote: dict) -> str:
    for placeholder, value in remote.items():
        text = text.replace(placeholder, value)
    return text


def _kubectl_apply(command: str, cwd, environ: dict) -> list:
    """Run one documented ``kubectl apply`` with a server-side dry run; the objects it would store."""
    assert command.startswith("kubectl apply "), command
    proc = subprocess.run(
        command + " --dry-run=server -o yaml",
        shell=True,
        cwd=cwd,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, "%s: %s" % (command, proc.stderr[-3000:])
    out = yaml.safe_load(proc.stdout)
    return out["items"] if out.get("kind") == "List" else [out]


def _by_kind(objects: list, kind: str) -> list:
    return [o for o in objects if o["kind"] == kind]


def _image(objects: list) -> str:
    (deployment,) = _by_kind(objects, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container["image"]


def test_remote_install_from_a_release_tag(remote, cluster, tmp_path):
    """controller.md's remote install: the tree read at the tag, the image tag is its version."""
    block = _one(
        "docs/controller.md", "kubectl apply -k 'https://<repo>/controller/config/default?ref=<tag>'"
    )
    (command,) = [line for line in block.text.splitlines() if line.strip()]
    objects = _kubectl_apply(_substitute(command, remote), tmp_path, cluster)
    assert _image(objects) == "egress-proxies-controller:%s" % _version()
    kinds = {o["kind"] for o in objects}
    assert {"Namespace", "CustomResourceDefinition", "ClusterRole", "ConfigMap", "Deployment"} <= kinds, kinds


def test_overlay_of_the_remote_base(remote, cluster, tmp_path):
    """controller.md's overlay: the user's providers file replaces the ConfigMap's, the image is
    the user's registry's at the release's tag, the monitoring and kubernetes-provider components
    come with it. Its providers.yaml is docs/kubernetes-provider.md's example."""
    overlay = _one("docs/controller.md", "configMapGenerator:")
    providers = _one("docs/kubernetes-provider.md", "type: kubernetes").text
    (tmp_path / "kustomization.yaml").write_text(_substitute(overlay.text, remote))
    (tmp_path / "providers.yaml").write_text(providers)
    objects = _kubectl_apply("kubectl apply -k .", tmp_path, cluster)
    (config,) = [
        o for o in _by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "egress-proxies-providers"
    ]
    assert config["data"] == {"providers.yaml": providers}
    assert _image(objects) == "registry.example/egress-proxies-controller:%s" % _version()
    assert _by_kind(objects, "ServiceMonitor"), "the monitoring component"
    roles = {o["metadata"]["name"] for o in _by_kind(objects, "ClusterRole")}
    assert any("kubernetes-provider" in name for name in roles), roles


@pytest.fixture(scope="module")
def dynamic(cluster, kube_admin) -> DynamicClient:
    return DynamicClient(kube_admin)


def _dry_run(dynamic: DynamicClient, obj: dict) -> dict:
    resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    return resource.server_side_apply(
        body=obj,
        name=obj["metadata"]["name"],
        namespace=obj["metadata"]["namespace"],
        field_manager="egress-proxies-doc-test",
        force_conflicts=True,
        dry_run="All",
        field_validation="Strict",
    ).to_dict()


def test_tracing_env_in_the_installs_deployment(dynamic):
    """controller.md's OTEL variables, set in the default install's Deployment, pass a strict dry run."""
    env = yaml.safe_load(_one("docs/controller.md", "OTEL_EXPORTER_OTLP_ENDPOINT").text)["env"]
    (deployment,) = _by_kind(
        kustomize_render.render(os.path.join(ROOT, "controller", "config", "default")), "Deployment"
    )
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    container["env"] = container.get("env", []) + env
    stored = _dry_run(dynamic, deployment)
    names = [e["name"] for e in stored["spec"]["template"]["spec"]["containers"][0]["env"]]
    assert {"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME"} <= set(names), names


def test_crawler_pod_spec_of_pools_md(dynamic, kube_admin):
    """pools.md's crawler: its Pod spec mounts the pool's endpoints Secret where PROXY_LIST points."""
    spec = yaml.safe_load(_one("docs/pools.md", "secretName: crawl-endpoints").text)["spec"]
    _ensure_namespace(kube_admin, "team-a")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "crawler", "namespace": "team-a"},
        "spec": spec,
    }
    stored = _dry_run(dynamic, pod)["spec"]
    (container,) = stored["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "egress"]  # beside the token's
    (variable,) = container["env"]
    assert variable["value"].startswith(mount["mountPath"] + "/"), (variable, mount)


def test_kubernetes_provider_file_checks_the_cluster(kube_cluster, kube_admin, tmp_path):
    """kubernetes-provider.md's providers file: proxy_check reaches the API server through the
    kubeconfig and context it names."""
    with open(kube_cluster.kubeconfig, encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    config = json.loads(json.dumps(config).replace('"%s"' % config["current-context"], '"prod-eu"'))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(config))
    kubeconfig.chmod(0o600)
    text = _one("docs/kubernetes-provider.md", "type: kubernetes").text
    assert "kubeconfig: /etc/egress/kubeconfig" in text and "context: prod-eu" in text
    providers_file = tmp_path / "providers.yaml"
    providers_file.write_text(text.replace("/etc/egress/kubeconfig", str(kubeconfig)))
    namespace = yaml.safe_load(text)["providers"][0]["kubernetes"]["namespace"]
    _ensure_namespace(kube_admin, namespace)
    run = run_playbook(
        tmp_path,
        [{"name": "check", "crawl.egress_proxies.proxy_check": {"providers_file": str(providers_file)}}],
    )
    assert run.rc == 0, run.stdout[-3000:]
    (provider,) = run["check"]["providers"]
    assert provider["name"] == "k8s-eu" and provider["ready"], provider
    info = run_playbook(
        tmp_path,
        [{"name": "info", "crawl.egress_proxies.proxy_info": {"providers_file": str(providers_file)}}],
    )
    assert info.rc == 0 and info["info"]["instances"] == [], info.stdout[-3000:]
