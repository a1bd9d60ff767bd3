"""The import rules of docs/architecture.md hold for every file of plugins/ and the controller,
each rule's check is shown able to fail on a small source that breaks it, and the page's
generated part is what the contracts (tests/unit/import_contracts.py) render."""

from __future__ import annotations

import importlib.util
import os

import pytest

from unit import import_check as check
from unit import import_contracts as contracts

spec = importlib.util.spec_from_file_location(
    "import_rules_doc", os.path.join(check.ROOT, "hack", "import_rules_doc.py")
)
doc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(doc)

MU = "from ansible_collections.crawl.egress_proxies.plugins.module_utils"
PU = "from ansible_collections.crawl.egress_proxies.plugins.plugin_utils"
GCP = "providers/gcp/insert"
CTRL = "controller/egress_proxies_controller/proxy/model.py"
AM = "from ansible.module_utils.basic import AnsibleModule\n"


def at(name: str) -> str:
    """A short name as a path: ``core/names`` -> plugins/module_utils/core/names.py, ``modules/proxy_gc``,
    ``inventory/proxies``, ``plugin_utils/...`` below plugins/; the controller's path as it is."""
    if name.startswith("controller/"):
        return name
    top = name.split("/")[0]
    inside = "/" in name and top in ("modules", "inventory", "plugin_utils", "action")
    return "plugins/%s%s.py" % ("" if inside else "module_utils/", name)


def guarded(statement: str) -> str:
    """``statement`` inside the guard rule 7 asks for."""
    return "try:\n    %s\nexcept ImportError:\n    pass\n" % statement


def in_function(source: str) -> str:
    return "def f():\n    " + source


# (id, rule, the file the source pretends to be, a source that breaks the rule).
BREAKS = [
    ("1-relative", 1, "runners/instances", "from ..core.names import name_from_uid\n"),
    ("1-relative-in-function", 1, "runners/instances", in_function("from . import names\n")),
    ("1-dynamic", 1, "core/names", "import importlib\nimportlib.import_module('x')\n"),
    ("1-dunder-import", 1, "core/names", "__import__('errors')\n"),
    ("1-short-path", 1, "core/names", "from plugins.module_utils.core import errors\n"),
    ("1-no-such-file", 1, "core/names", MU + " import no_such_file\n"),
    ("1-not-module-utils", 1, "core/names", PU + " import proxy_hosts\n"),
    ("2-registry", 2, "modules/proxy_gc", MU + " import registry\n"),
    ("2-other-runner", 2, "modules/proxy_gc", MU + ".runners import instances\n"),
    ("2-provider", 2, "modules/proxy_gc", MU + ".providers.local import provider\n"),
    ("2-ansible", 2, "modules/proxy_gc", AM),
    ("3-registry", 3, "runners/instances", MU + " import registry\n"),
    ("3-glue", 3, "runners/pools", MU + ".module_glue.proxy_module import ProxyModule\n"),
    ("3-provider", 3, "runners/gc", MU + ".providers.kubernetes import sdk\n"),
    ("3-ansible", 3, "runners/inventory", in_function("import ansible.module_utils.basic\n")),
    ("4-glue-imports-provider", 4, "module_glue/proxy_module", MU + ".providers.local import provider\n"),
    ("4-registry-past-provider-type", 4, "registry", MU + ".providers.local import provider\n"),
    ("5-other-provider", 5, GCP, MU + ".providers.local import store\n"),
    ("5-runner", 5, GCP, MU + ".runners import instances\n"),
    ("5-glue", 5, GCP, MU + ".module_glue import proxy_module\n"),
    ("5-core-not-allowed", 5, GCP, MU + ".config import providers_file\n"),
    ("5-ansible", 5, GCP, in_function(AM)),
    ("6-core-runner", 6, "config/providers_file", MU + ".runners import instances\n"),
    ("6-helper-glue", 6, "helpers/excerpt", MU + ".module_glue.proxy_module import ProxyModule\n"),
    ("6-core-provider", 6, "core/names", MU + ".providers.gcp import labels\n"),
    ("6-core-ansible", 6, "core/errors", "import ansible.module_utils.basic\n"),
    ("7-unguarded", 7, "core/pydantic_compat", "import pydantic\n"),
    ("7-unguarded-in-function", 7, "core/pydantic_compat", in_function("import pydantic\n")),
    ("7-wrong-guard", 7, "core/pydantic_compat", "try:\n    import pydantic\nexcept ValueError:\n    pass\n"),
    ("7-in-handler", 7, "core/pydantic_compat", "try:\n    pass\nexcept ImportError:\n    import pydantic\n"),
    ("7-pydantic-elsewhere", 7, "config/providers_file", guarded("import pydantic")),
    ("7-otel-elsewhere", 7, "core/names", guarded("from opentelemetry import trace")),
    ("7-kubernetes-elsewhere", 7, "runners/gc", guarded("import kubernetes")),
    ("7-kubernetes-past-sdk", 7, "providers/kubernetes/pod", guarded("import kubernetes")),
    ("7-other-providers-sdk", 7, "providers/gcp/api", guarded("import libvirt")),
    ("7-no-home", 7, "core/names", guarded("import boto3")),
    ("9-fail-json", 9, "runners/instances", "def f(module):\n    module.fail_json(msg='x')\n"),
    ("9-exit-json", 9, "modules/proxy_gc", "module.exit_json(changed=False)\n"),
    ("10-registry", 10, "inventory/proxies", MU + " import registry\n"),
    ("10-provider", 10, "inventory/proxies", MU + ".providers.local import provider_type\n"),
    ("10-runner", 10, "plugin_utils/proxy_hosts", MU + ".runners import inventory\n"),
    ("10-session-provider", 10, "plugin_utils/provider_session", MU + ".providers.gcp import api\n"),
    ("11-not-listed", 11, CTRL, "from .. import collection\n" + MU + ".core import names\n"),
    ("11-plugin-utils", 11, CTRL, "from .. import collection\n" + in_function(PU + " import proxy_hosts\n")),
    ("11-short-path", 11, CTRL, "from plugins.module_utils.core import names\n"),
    (
        "13-collection-after",
        13,
        CTRL,
        "from ansible_collections.kubernetes.core.plugins import module_utils\nfrom .. import collection\n",
    ),
    ("12-kubernetes-outside-kube", 12, CTRL, "from kubernetes.client.exceptions import ApiException\n"),
]

# Sources the rules allow, so a check that refuses everything would be caught too.
ALLOWS = [
    ("7-home", "core/pydantic_compat", guarded("import pydantic")),
    ("7-sdk", "providers/kubernetes/sdk", guarded("from kubernetes import client")),
    (
        "5-own-and-helper",
        GCP,
        MU + ".providers.gcp import labels\n" + MU + ".helpers import cloud_init_auth\n",
    ),
    ("5-urls", "providers/libvirt/image", "from ansible.module_utils.urls import open_url\n"),
    ("4-registry", "registry", MU + ".providers.local import provider_type\n"),
    (
        "2-own-runner",
        "modules/proxy_gc",
        MU + ".runners import orphans\n" + MU + ".module_glue.proxy_module import ProxyModule\n",
    ),
    ("3-args-common", "runners/instances", MU + ".module_glue.args_common import STATE_PRESENT\n"),
    (
        "10-session",
        "plugin_utils/provider_session",
        MU + ".runners import inventory\n" + MU + " import registry\n",
    ),
    ("11-relative-and-libraries", CTRL, "from . import api\nimport yaml\n"),
    (
        "12-kube",
        "controller/egress_proxies_controller/kube/client.py",
        "from kubernetes import client, watch\n",
    ),
]


@pytest.fixture(scope="module")
def known() -> set[str]:
    return check.plugin_modules()


def test_the_tree_keeps_every_rule():
    problems = check.check_tree()
    assert not problems, "\n".join(map(str, problems))


@pytest.mark.parametrize(("rule", "name", "source"), [pytest.param(*row[1:], id=row[0]) for row in BREAKS])
def test_each_rule_can_fail(rule, name, source, known, monkeypatch):
    monkeypatch.setattr(contracts, "CONTROLLER_MAY_IMPORT", ())
    path = at(name)
    found = check.check_source(path, source, known)
    assert [v.rule for v in found] == [rule], found
    text = str(found[0])
    assert text.startswith("%s:" % path) and "rule %d (" % rule in text and "`" in text


@pytest.mark.parametrize(("name", "source"), [pytest.param(*row[1:], id=row[0]) for row in ALLOWS])
def test_allowed_imports_pass(name, source, known):
    assert check.check_source(at(name), source, known) == []


def test_the_controller_may_import_what_its_list_holds(known, monkeypatch):
    monkeypatch.setattr(contracts, "CONTROLLER_MAY_IMPORT", ("core.names",))
    first = "from .. import collection\n"
    assert check.check_source(CTRL, first + MU + ".core import names\n", known) == []
    assert check.check_source(CTRL, first + MU + ".core.names import name_from_uid\n", known) == []
    assert [
        v.rule for v in check.check_source(CTRL, first + MU + ".config import providers_file\n", known)
    ] == [11]


def test_every_rule_is_checked_or_says_why_not():
    shown = {row[1] for row in BREAKS}
    assert shown | contracts.NOT_CHECKED.keys() == contracts.RULES.keys()
    assert not shown & contracts.NOT_CHECKED.keys()


def without(names: tuple[str, ...], name: str) -> tuple[str, ...]:
    return tuple(n for n in names if n != name)


def layers_with(**changes: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    layers = dict(contracts.LAYERS)
    layers.update({key.replace("_", " "): value for key, value in changes.items()})
    return layers


def no_helpers_folder() -> dict[str, tuple[str, ...]]:
    return layers_with(helpers=without(contracts.LAYERS["helpers"], "helpers"))


def names_twice() -> dict[str, tuple[str, ...]]:
    return layers_with(helpers=(*contracts.LAYERS["helpers"], "core.names"))


def stale_core() -> dict[str, tuple[str, ...]]:
    return layers_with(core=(*contracts.LAYERS["core"], "gone"))


def gc_without_runner() -> dict[str, str]:
    return {k: v for k, v in contracts.MODULE_RUNNERS.items() if k != "proxy_gc"}


# (id, contract changed, its broken value, the rule reported, words of the report).
BROKEN_CONTRACTS = [
    ("file-in-no-layer", "LAYERS", no_helpers_folder, "the layers", "in no layer"),
    ("file-in-two-layers", "LAYERS", names_twice, "the layers", "in both"),
    ("stale-name", "LAYERS", stale_core, "the layers", "names no module_utils file"),
    ("module-without-runner", "MODULE_RUNNERS", gc_without_runner, 2, "MODULE_RUNNERS"),
    ("provider-list-not-closed", "PROVIDER_MAY_IMPORT_CORE", lambda: ("config.base",), 5, "allow-list"),
    (
        "provider-list-names-a-runner",
        "PROVIDER_MAY_IMPORT_CORE",
        lambda: ("runners.gc",),
        5,
        "not a core file",
    ),
    (
        "controller-list-not-pure",
        "CONTROLLER_MAY_IMPORT",
        lambda: ("config.providers_file",),
        11,
        "allow-list",
    ),
    (
        "controller-list-ansible",
        "CONTROLLER_MAY_IMPORT",
        lambda: ("module_glue.arg_shapes",),
        11,
        "standard library",
    ),
    ("stale-home", "THIRD_PARTY_HOMES", lambda: {"pydantic": ("gone",)}, 7, "names no file"),
]


@pytest.mark.parametrize(
    ("attribute", "value", "rule", "words"), [pytest.param(*row[1:], id=row[0]) for row in BROKEN_CONTRACTS]
)
def test_the_contracts_are_checked_against_the_tree(attribute, value, rule, words, monkeypatch):
    monkeypatch.setattr(contracts, attribute, value())
    found = [v for v in check.check_contracts() if v.rule == rule]
    assert any(words in str(v) for v in found), check.check_contracts()


def test_the_page_shows_the_contracts():
    with open(doc.DOC, encoding="utf-8") as handle:
        text = handle.read()
    assert doc.rewrite(text) == text, "docs/architecture.md is stale: run python hack/import_rules_doc.py"


def test_the_page_names_every_layer_and_file():
    block = doc.render()
    for layer, homes in contracts.LAYERS.items():
        assert "| %s |" % layer in block
        assert all(("`%s/`" % home in block) or ("`%s`" % home in block) for home in homes)
    for name in check.files_under(
        check.plugin_modules(), [h for homes in contracts.LAYERS.values() for h in homes]
    ):
        assert "`%s`" % name.rpartition(".")[2] in block, name
    for rule in contracts.RULES:
        assert "%d. " % rule in doc.section(doc.read())


def test_a_closed_controller_list_of_pure_files_passes(monkeypatch):
    pure = (
        "core.names",
        "telemetry.tracing",
        "helpers.uid_shards",
        "core.errors",
        "runners.pool_split",
        "helpers.proxy_auth",
        "helpers.excerpt",
        "helpers.sha512_crypt",
    )
    monkeypatch.setattr(contracts, "CONTROLLER_MAY_IMPORT", pure)
    assert [v for v in check.check_contracts() if v.rule == 11] == []
