"""The ``kubernetes:`` block through the real providers-file parser: defaults, and bad input
rejected with the exact field named."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.config import (
    DEFAULT_ALLOWED_SOURCE_RANGES,
    DEFAULT_IMAGE,
)


def parse(block):
    entry = {"name": "k8s", "type": "kubernetes"}
    if block is not None:
        entry["kubernetes"] = block
    return config.parse({"providers": [entry]})


def test_defaults():
    spec = parse(None).find("k8s")
    block = spec.block
    assert spec.type == "kubernetes"
    assert block.image == DEFAULT_IMAGE
    assert block.allowed_source_ranges == list(DEFAULT_ALLOWED_SOURCE_RANGES)
    assert block.namespace is None and block.kubeconfig is None and block.context is None
    assert block.resources.requests and block.resources.limits


def test_full_block():
    block = (
        parse(
            {
                "image": "registry.example/squid:7",
                "resources": {
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                },
                "allowedSourceRanges": ["100.64.0.0/10"],
                "namespace": "egress",
                "kubeconfig": "/etc/egress/kubeconfig",
                "context": "prod",
                "runAsUser": 31,
                "requestTimeoutSeconds": 10,
            }
        )
        .find("k8s")
        .block
    )
    assert block.namespace == "egress" and block.context == "prod" and block.run_as_user == 31
    assert block.resources.limits == {"cpu": "1", "memory": "1Gi"}


@pytest.mark.parametrize(
    ("block", "path"),
    [
        ({"namespace": "Not_A_Label"}, "providers[0].kubernetes.namespace"),
        ({"allowedSourceRanges": ["everyone"]}, "providers[0].kubernetes.allowedSourceRanges"),
        ({"allowedSourceRanges": []}, "providers[0].kubernetes.allowedSourceRanges"),
        ({"resources": {"limits": {"cpu": "lots"}}}, "providers[0].kubernetes.resources.limits"),
        ({"resources": {"requests": {"gpu": "1"}}}, "providers[0].kubernetes.resources.requests"),
        ({"resources": {"limit": {}}}, "providers[0].kubernetes.resources.limit"),
        ({"kubeconfig": "relative/path"}, "providers[0].kubernetes.kubeconfig"),
        ({"context": ""}, "providers[0].kubernetes.context"),
        ({"image": ""}, "providers[0].kubernetes.image"),
        ({"image": "squid 6"}, "providers[0].kubernetes.image"),
        ({"requestTimeoutSeconds": 0}, "providers[0].kubernetes.requestTimeoutSeconds"),
        ({"image_name": "x"}, "providers[0].kubernetes.image_name"),
    ],
)
def test_bad_input_names_the_field(block, path):
    with pytest.raises(ConfigError) as caught:
        parse(block)
    assert any(problem.startswith(path + ":") for problem in caught.value.problems), caught.value.problems


def test_constructor_never_contacts_the_cluster():
    # A kubeconfig that does not exist: building the provider must still succeed.
    from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry

    spec = parse({"kubeconfig": "/nonexistent/kubeconfig"}).find("k8s")
    provider = registry.build(spec, "default")
    assert provider.name == "k8s"
