"""What a documentation block is, and how far this machine can check it without running it.

The checks are the parts' own validators: a providers file goes through the collection's
``providers_file.parse``, a playbook through ``ansible-playbook --syntax-check``, a shell block
through ``bash -n``, Python through ``compile``. Blocks that a test runs for real
(``RUN_BY``) are counted as run there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import yaml

from .markdown_blocks import ROOT, Block

# Blocks run for real by another test of this directory: (file, a string the block contains).
RUN_BY = {
    ("docs/awx.md", "awx.awx.credential_type"): "tests/docs/test_awx_doc_playbooks.py",
    ("docs/awx.md", "awx.awx.job_template"): "tests/docs/test_awx_doc_playbooks.py",
    ("docs/awx.md", "One proxy per line of the survey"): "tests/docs/test_awx_doc_playbooks.py",
    ("README.md", "# /etc/egress-proxies/providers.yaml"): "tests/docs/test_readme_tour.py",
    ("README.md", "Three proxies, waiting until each serves"): "tests/docs/test_readme_tour.py",
    ("README.md", "# egress.proxies.yml\nplugin:"): "tests/docs/test_readme_tour.py",
    ("README.md", "ansible-inventory -i egress.proxies.yml --graph"): "tests/docs/test_readme_tour.py",
    ("docs/inventory.md", "plugin: crawl.egress_proxies.proxies"): "tests/docs/test_readme_tour.py",
    (
        "docs/inventory.md",
        "ansible-playbook -i inventory/egress.proxies.yml",
    ): "tests/docs/test_readme_tour.py",
    ("docs/inventory.md", "- name: Every running proxy answers"): "tests/docs/test_readme_tour.py",
    ("README.md", "egress-proxies-controller --version"): "tests/docs/test_local_blocks.py",
    ("README.md", "spec: {provider: local, port: 3128}"): "tests/docs/test_readme_proxy.py",
    ("docs/configuration.md", "uid: 2f1c0d4e-demo"): "tests/docs/test_local_blocks.py",
    ("docs/local-provider.md", "squidBinary: squid"): "tests/docs/test_local_blocks.py",
    ("docs/local-provider.md", '"proxy-operator-managed": "true"'): "tests/docs/test_local_blocks.py",
    ("docs/modules.md", "group/crawl.egress_proxies.egress_proxies:"): "tests/docs/test_local_blocks.py",
    ("docs/playbooks.md", "# inventory.yml\nall:"): "tests/docs/test_playbook_blocks.py",
    (
        "docs/playbooks.md",
        "playbooks/proxies_create.yml   # the proxies",
    ): "tests/docs/test_playbook_blocks.py",
    ("docs/playbooks.md", "ansible-vault create auth.yml"): "tests/docs/test_playbook_blocks.py",
    (
        "docs/modules.md",
        "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318",
    ): "tests/docs/test_playbook_blocks.py",
    ("docs/awx.md", "# inventory/egress.proxies.yml"): "tests/docs/test_awx_inventory_source.py",
    ("docs/awx.md", "# Injector configuration"): "tests/docs/test_awx_inventory_source.py",
    ("docs/local-provider.md", "<stateDir>/\n  instances/<name>/"): "tests/docs/test_playbook_blocks.py",
    ("docs/local-provider.md", "http_port <address>:<port>"): "tests/docs/test_playbook_blocks.py",
    ("docs/gcp-provider.md", "installation: prod-eu"): "tests/docs/test_gcp_blocks.py",
    ("docs/gcp-provider.md", "installation: runbook"): "tests/docs/test_gcp_blocks.py",
    ("docs/gcp-provider.md", "- name: One egress proxy on Compute Engine"): "tests/docs/test_gcp_blocks.py",
    ("docs/configuration.md", "name: local-lab"): "tests/docs/test_local_blocks.py",
    ("README.md", "make demo"): "tests/docs/test_readme_demo.py",
    ("README.md", "galaxy.yml meta/"): "tests/docs/test_readme_layout.py",
    (
        "docs/controller.md",
        "kubectl apply -k 'https://<repo>/controller/config/default?ref=<tag>'",
    ): "tests/docs/test_controller_blocks.py",
    ("docs/controller.md", "configMapGenerator:"): "tests/docs/test_controller_blocks.py",
    ("docs/kubernetes-provider.md", "name: k8s-eu"): "tests/docs/test_controller_blocks.py",
    ("docs/pools.md", 'os.environ["PROXY_LIST"]'): "tests/docs/test_pool_blocks.py",
    ("docs/contract.md", "class TestMyTypeContract(ContractSuite)"): "tests/docs/test_contract_block.py",
    ("docs/testing.md", "proxy_gc - what was wrong, as a user saw it"): "tests/docs/test_changelog_block.py",
}


# Output and diagram blocks (no language) that a test compares with what the part really makes
# or has: (file, a string the block contains) -> the test. Counted as "compared" (tally.py).
COMPARED_BY = {
    ("README.md", "created: proxy-"): "tests/docs/test_readme_demo.py",  # the demo's output, by shape
    ("docs/auth.md", "auth_param basic program"): "tests/docs/test_output_blocks.py",
    ("docs/playbooks.md", "did not converge"): "tests/docs/test_output_blocks.py",
    ("docs/configuration.md", "unknown provider type 'lokal'"): "tests/docs/test_config_messages.py",
    ("docs/architecture.md", "Proxy and ProxyPool objects ─watch─▶"): "tests/unit/test_architecture_names.py",
    ("docs/architecture.md", "kube/client.py: every API call"): "tests/unit/test_architecture_names.py",
    ("docs/inventory.md", "@all:\n  |--@proxies:"): "tests/docs/test_readme_tour.py",
    ("docs/libvirt-provider.md", "<egress:instance"): "tests/docs/test_output_blocks.py",
    ("docs/local-provider.md", "squid.start"): "tests/contract/test_trace_local.py",
    ("docs/gcp-provider.md", "gcp.instances.insert"): "tests/contract/test_trace_gcp.py",
    ("docs/kubernetes-provider.md", "k8s.POST"): "tests/contract/test_trace_kubernetes.py",
    ("docs/libvirt-provider.md", "libvirt.dial"): "tests/contract/test_trace_libvirt.py",
    ("docs/controller.md", "reconcile.apply"): "tests/controller/test_e2e_tracing.py",
    ("docs/libvirt-provider.md", "; the host's KVM cannot start"): "tests/docs/test_test_infra_blocks.py",
    ("docs/testing.md", "test hypervisor: domainType"): "tests/docs/test_test_infra_blocks.py",
    ("docs/testing.md", "root namespace"): "tests/docs/test_test_infra_blocks.py",
    ("docs/testing.md", "==> version matrix ("): "tests/docs/test_test_infra_blocks.py",
    ("docs/controller.md", "informer (cache)"): "tests/docs/test_test_infra_blocks.py",
}


# How a block that no test runs is checked, for the closing note.
CHECKED_BY = {
    "sh": "bash -n",
    "python": "compile()",
    "json": "json.loads",
    "yaml": "YAML parse",
    "manifest": "its API objects by the API server's dry run (tests/docs/test_manifest_blocks.py)",
    "providers-file": "the collection's providers-file parser",
    "playbook": "ansible-playbook --syntax-check",
}


def kind(block: Block) -> str:
    """providers-file, playbook, manifest, yaml, sh, python, json, or text (output, diagrams)."""
    if block.language in ("sh", "bash", "console", "shell"):
        return "sh"
    if block.language in ("python", "json"):
        return block.language
    if block.language in ("yaml", "yml"):
        try:
            documents = [d for d in yaml.safe_load_all(block.text) if d is not None]
        except yaml.YAMLError:
            return "yaml"
        if len(documents) == 1 and isinstance(documents[0], dict) and "providers" in documents[0]:
            return "providers-file"
        if documents and all(isinstance(d, list) and d and all("hosts" in p for p in d) for d in documents):
            return "playbook"
        if documents and all(isinstance(d, dict) and "apiVersion" in d and "kind" in d for d in documents):
            return "manifest"
        return "yaml"
    return "text"


def run_by(block: Block) -> str:
    """The test that runs this block for real, or ``""``."""
    return _test_of(block, RUN_BY)


def compared_by(block: Block) -> str:
    """The test that compares this output or diagram with the real thing, or ``""``."""
    return _test_of(block, COMPARED_BY)


def _test_of(block: Block, table: dict) -> str:
    for (path, needle), test in table.items():
        if block.path == path and needle in block.text:
            return test
    return ""


def check(block: Block, what: str, collections: str) -> str:
    """Validate a block without running it; returns ``""`` or the problem."""
    if what == "sh":
        proc = subprocess.run(["bash", "-n"], input=block.text, capture_output=True, text=True, check=False)
        return proc.stderr.strip()
    if what == "python":
        try:
            compile(block.text, block.where, "exec")
        except SyntaxError as exc:
            return str(exc)
        return ""
    if what == "json":
        try:
            json.loads(block.text)
        except ValueError as exc:
            return str(exc)
        return ""
    if what in ("yaml", "manifest"):
        try:
            list(yaml.safe_load_all(block.text))
        except yaml.YAMLError as exc:
            return str(exc)
        return ""
    if what == "providers-file":
        return _providers_file_problem(block)
    if what == "playbook":
        return _syntax_check(block, collections)
    return ""


def _providers_file_problem(block: Block) -> str:
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
    from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors

    try:
        providers_file.parse(yaml.safe_load(block.text), block.where)
    except errors.ConfigError as exc:
        return str(exc)
    return ""


def _syntax_check(block: Block, collections: str) -> str:
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    with tempfile.TemporaryDirectory(prefix="i37-docs-block-") as scratch:
        path = os.path.join(scratch, "block.yml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(block.text)
        environ = dict(
            os.environ,
            ANSIBLE_COLLECTIONS_PATH=collections,
            ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
            ANSIBLE_ROLES_PATH=os.path.join(ROOT, "roles"),
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_LOCALHOST_WARNING="false",
            ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        )
        proc = subprocess.run(
            [playbook_bin, "--syntax-check", path],
            capture_output=True,
            text=True,
            env=environ,
            timeout=120,
            check=False,
        )
    return "" if proc.returncode == 0 else (proc.stdout + proc.stderr)[-1500:]
