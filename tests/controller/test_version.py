"""One version for the collection, the controller and its image: the build-info gauge and the
User-Agent carry the collection's version (galaxy.yml). The User-Agent on the wire is checked
against the API server's audit log in test_e2e_rbac_audit.py."""

from __future__ import annotations

from egress_proxies_controller import version
from egress_proxies_controller.kube import client as kube
from egress_proxies_controller.telemetry import metrics

from .test_package import collection_version


def test_the_build_info_gauge_names_the_collection_version():
    rendered = metrics.Metrics().render().decode()
    assert 'egress_proxies_controller_build_info{version="%s"} 1.0' % collection_version() in rendered


def test_the_client_names_itself_with_the_version(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {token: t}}]\n"
    )
    client = kube.load(str(kubeconfig))
    try:
        assert client.user_agent == "egress-proxies-controller/%s" % collection_version()
        assert version.user_agent() == client.user_agent
    finally:
        client.close()
