"""The kubernetes block's connection options (kubernetes.core's names, camelCase) and the
``K8S_AUTH_*`` variables, through the real providers-file parser and the real client builder:
which wins, what a bad value is refused with (naming the field or the variable, never the
token), and the client ``Configuration`` that results. Nothing here dials a cluster.
"""

from __future__ import annotations

import json

import pytest
from kubernetes.config import kube_config

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import sdk

# kubernetes.core's variables (k8s/client.py: K8S_AUTH_ + the option, or + its client name).
VARIABLES = (
    "K8S_AUTH_KUBECONFIG",
    "K8S_AUTH_CONTEXT",
    "K8S_AUTH_HOST",
    "K8S_AUTH_API_KEY",
    "K8S_AUTH_CA_CERT",
    "K8S_AUTH_SSL_CA_CERT",
    "K8S_AUTH_CLIENT_CERT",
    "K8S_AUTH_CERT_FILE",
    "K8S_AUTH_CLIENT_KEY",
    "K8S_AUTH_KEY_FILE",
    "K8S_AUTH_VALIDATE_CERTS",
    "K8S_AUTH_VERIFY_SSL",
    "K8S_AUTH_PROXY",
)
TOKEN = "s3cr3t-token-value"  # a test value, must never appear in a message


@pytest.fixture(autouse=True)
def _no_ambient_env(monkeypatch, tmp_path):
    """No K8S_AUTH_* (nor a kubeconfig or Service host) of the machine leaks into a test."""
    for variable in VARIABLES:
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    # The client reads $KUBECONFIG once, at import, into this default.
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(tmp_path / "no-such-kubeconfig"))


def block_of(block: dict | None = None):
    entry: dict = {"name": "k8s", "type": "kubernetes"}
    if block is not None:
        entry["kubernetes"] = block
    return config.parse({"providers": [entry]}).find("k8s").block


def write_kubeconfig(path, server: str) -> None:
    """A one-context token kubeconfig for ``server`` (never dialled here)."""
    cluster = {"name": "c", "cluster": {"server": server}}
    user = {"name": "u", "user": {"token": "from-kubeconfig"}}
    context = {"name": "x", "context": {"cluster": "c", "user": "u"}}
    doc = {"apiVersion": "v1", "kind": "Config", "clusters": [cluster], "users": [user]}
    path.write_text(json.dumps(dict(doc, contexts=[context], **{"current-context": "x"})))


def refused(block: dict) -> str:
    with pytest.raises(ConfigError) as info:
        block_of(block)
    message = str(info.value)
    assert TOKEN not in message
    return message


def test_the_variables_awx_bearer_token_credential_injects_fill_the_block(monkeypatch, tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_text("x")
    monkeypatch.setenv("K8S_AUTH_HOST", "https://127.0.0.1:6443/")
    monkeypatch.setenv("K8S_AUTH_API_KEY", TOKEN)
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "True")
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", str(ca))
    block = block_of()
    assert (block.host, block.api_key, block.validate_certs, block.ca_cert) == (
        "https://127.0.0.1:6443/",
        TOKEN,
        True,
        str(ca),
    )
    assert TOKEN not in repr(block)
    configuration = sdk.api_client(block).configuration
    assert configuration.host == "https://127.0.0.1:6443"
    assert configuration.api_key == {"authorization": "Bearer %s" % TOKEN}
    assert configuration.verify_ssl is True and configuration.ssl_ca_cert == str(ca)


@pytest.mark.parametrize("raw, expected", [("False", False), ("no", False), ("0", False), ("yes", True)])
def test_a_boolean_variable_is_false_only_for_0_false_no(monkeypatch, raw, expected):
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", raw)
    assert block_of().validate_certs is expected


def test_the_block_wins_over_the_variable_and_the_long_name_over_the_short(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_HOST", "https://from-env:6443")
    monkeypatch.setenv("K8S_AUTH_CA_CERT", "/long/ca")
    monkeypatch.setenv("K8S_AUTH_SSL_CA_CERT", "/short/ca")
    monkeypatch.setenv("K8S_AUTH_VALIDATE_CERTS", "false")
    monkeypatch.setenv("K8S_AUTH_VERIFY_SSL", "true")
    block = block_of({"host": "https://from-block:6443"})
    assert block.host == "https://from-block:6443"
    assert block.ca_cert == "/long/ca"
    assert block.validate_certs is False


def test_host_with_a_token_loads_no_kubeconfig_and_no_in_cluster_config(tmp_path):
    block = block_of(
        {
            "host": "https://127.0.0.1:1",
            "apiKey": TOKEN,
            "validateCerts": False,
            "proxy": "http://127.0.0.1:3",
        }
    )
    configuration = sdk.api_client(block).configuration
    assert configuration.verify_ssl is False
    assert configuration.proxy == "http://127.0.0.1:3"
    assert configuration.retries == 0


def test_options_override_what_the_kubeconfig_gives(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, "https://127.0.0.1:7")
    block = block_of({"kubeconfig": str(kubeconfig), "apiKey": TOKEN})
    configuration = sdk.api_client(block).configuration
    assert configuration.host == "https://127.0.0.1:7"
    assert configuration.api_key == {"authorization": "Bearer %s" % TOKEN}


def test_without_options_in_cluster_then_the_default_kubeconfig_is_tried(monkeypatch, tmp_path):
    kubeconfig = tmp_path / "default"
    write_kubeconfig(kubeconfig, "https://127.0.0.1:9")
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig))
    assert sdk.api_client(block_of()).configuration.host == "https://127.0.0.1:9"


def test_neither_in_cluster_nor_a_default_kubeconfig_says_both():
    with pytest.raises(sdk.ConfigException) as info:
        sdk.api_client(block_of())
    assert str(info.value).startswith("in-cluster config, then the default kubeconfig: ")


@pytest.mark.parametrize(
    "block, field",
    [
        ({"host": "127.0.0.1:6443"}, "providers[0].kubernetes.host: must be an http:// or https:// URL"),
        ({"proxy": "socks"}, "providers[0].kubernetes.proxy: must be an http:// or https:// URL"),
        ({"caCert": "ca.crt"}, "providers[0].kubernetes.caCert: must be an absolute path"),
        ({"apiKey": ""}, "providers[0].kubernetes.apiKey: must not be empty"),
        ({"apiKey": 12}, "providers[0].kubernetes.apiKey: Input should be a valid string"),
        ({"validateCerts": "yes"}, "providers[0].kubernetes.validateCerts: Input should be a valid boolean"),
        ({"clientCert": "/c.crt", "apiKey": TOKEN}, "clientCert and clientKey go together"),
        ({"api_key": TOKEN}, "providers[0].kubernetes.api_key: unknown field"),
    ],
)
def test_a_bad_option_is_refused_naming_the_field_never_the_token(block, field):
    assert field in refused(block)


def test_a_bad_variable_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("K8S_AUTH_HOST", "not-a-url " + TOKEN)
    assert "K8S_AUTH_HOST (read for host): must be an http:// or https:// URL" in refused({})


def test_a_missing_ca_file_is_unavailable_naming_the_option(tmp_path):
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.credential_files import (
        CredentialsUnavailable,
    )

    block = block_of({"host": "https://127.0.0.1:1", "apiKey": TOKEN, "caCert": str(tmp_path / "gone")})
    with pytest.raises(CredentialsUnavailable, match=r"caCert .*gone cannot be read"):
        sdk.api_client(block)


def test_the_client_keeps_a_connection_for_each_thread_of_a_batch():
    """A batch works on ``concurrency`` items at once through the provider's one client; urllib3
    closes the connections its pool cannot keep, so a pool smaller than that pays a TLS handshake
    per call beyond it (the client's default is 5 per CPU: 10 on a 2-core machine)."""
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue import args_common

    block = block_of({"host": "https://127.0.0.1:1", "apiKey": TOKEN})
    client = sdk.api_client(block)
    kept = client.rest_client.pool_manager.connection_pool_kw["maxsize"]
    assert kept == sdk.POOL_SIZE >= args_common.PROVIDERS_ARGS["concurrency"]["default"], kept
