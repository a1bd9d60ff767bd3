"""The import contracts of docs/architecture.md ("Import rules"), as data, in this one place.

tests/unit/test_import_rules.py checks every .py under plugins/ and the controller against them,
and hack/import_rules_doc.py renders them into docs/architecture.md, so the page, the test and
the code cannot drift apart. Names are module paths below ``plugins/module_utils/`` (``core.names``,
``providers.gcp``); a name that is a folder stands for every file below it. A file's layer is
its folder's; a new folder (or top-level file) fails the test until it is placed in a layer here.
"""

from __future__ import annotations

# The rules as the page numbers them; a failure names the rule by number and this title.
RULES: dict[int, str] = {
    1: "imports are absolute",
    2: "modules import only the module glue and their own runner",
    3: "runners never reach a provider but through ProxyModule",
    4: "registry.py is the only importer of provider packages",
    5: "providers import only the allowed core and helpers and their own package",
    6: "the core and the helpers never import a runner, the module glue or a provider",
    7: "third-party libraries are guarded and live in their named homes",
    8: "constructors never contact the backend",
    9: "only ProxyModule calls fail_json/exit_json",
    10: "controller-side plugins reach providers only through provider_session",
    11: "the controller imports from plugins/ only the files in CONTROLLER_MAY_IMPORT",
    12: "the controller imports the kubernetes client only in kube/client.py",
    13: "a controller file imports `collection` before the collection's module_utils",
}

# Why a rule has no static check (the page says so too).
NOT_CHECKED: dict[int, str] = {
    8: "behaviour, not an import: the local, kubernetes and gcp providers' unit tests check it"
    " (`test_constructor_never_*`, `test_constructor_makes_no_call_*`)",
}

# Each layer and its folders below plugins/module_utils/ (a top-level file stands for itself):
# a file's folder is its layer, so a new file needs no entry, and a new folder fails the test
# until it is placed here. Provider packages (``providers/<name>``) are a layer each.
LAYERS: dict[str, tuple[str, ...]] = {
    "module glue": ("module_glue",),
    "runners": ("runners",),
    "registry": ("registry",),
    "core": ("core", "config", "telemetry"),
    "helpers": ("helpers",),
}

# What each layer's files are for, one line each on the page.
LAYER_PURPOSE: dict[str, str] = {
    "module glue": "`ProxyModule`, the shared option specs and list-option shapes; the one layer"
    " that uses `ansible.module_utils`",
    "runners": "the desired-state logic behind each module; raise, never fail",
    "registry": "the one place a provider type is registered",
    "core": "the provider contract, errors and their seam, deadlines, names, configuration, telemetry",
    "helpers": "small self-contained helpers any layer below the glue may use, providers included",
}

# Rule 2: each module and its runner (a new module fails the test until it is named here).
MODULE_RUNNERS: dict[str, str] = {
    "proxy_instance": "runners.instances",
    "proxy_info": "runners.inventory",
    "proxy_gc": "runners.orphans",
    "proxy_check": "runners.health",
    "proxy_pool": "runners.pools",
}
MODULE_GLUE_FOR_MODULES: tuple[str, ...] = ("module_glue.proxy_module", "module_glue.args_common")

# Rule 3: the one glue file runners may import (option specs and state names, no AnsibleModule).
RUNNER_MAY_IMPORT_GLUE: tuple[str, ...] = ("module_glue.args_common",)

# Rule 5: the core files a provider package may import, besides every helper and its own
# package; the check also holds this set closed under the helpers' and these files' imports.
PROVIDER_MAY_IMPORT_CORE: tuple[str, ...] = (
    "core.contract",
    "core.placement",
    "core.errors",
    "core.error_seam",
    "core.deadline",
    "core.names",
    "config.base",
    "config.yaml_reader",
    "core.pydantic_compat",
    "core.provider_type",
    "core.squid_conf",
    # The child span per backend call (opened at each provider's seam) and the run's context it
    # hangs from; opentelemetry stays behind telemetry's guarded import (rule 7).
    "telemetry.backend_spans",
    "telemetry.tracing",
)
# Rule 5: the one part of ansible-core a provider may import (see the page for why).
PROVIDER_MAY_IMPORT_ANSIBLE: tuple[str, ...] = ("ansible.module_utils.urls",)

# Rule 7: each third-party library (top-level import name) and where it may be imported: a
# module_utils file, or a package (any file below it). Anything else is refused.
THIRD_PARTY_HOMES: dict[str, tuple[str, ...]] = {
    "pydantic": ("core.pydantic_compat",),
    "opentelemetry": ("telemetry",),
    "yaml": ("config.yaml_reader",),
    "kubernetes": ("runners.live_uids", "providers.kubernetes.sdk"),
    "urllib3": ("providers.kubernetes.sdk",),
    "google": ("providers.gcp",),
    "requests": ("providers.gcp",),
    "libvirt": ("providers.libvirt",),
    "pycdlib": ("providers.libvirt",),
}
# Rule 7: names that are neither the standard library nor third-party.
NOT_THIRD_PARTY: tuple[str, ...] = ("__future__", "ansible", "ansible_collections")

# Rule 9: the one file that calls these.
EXIT_CALLS: tuple[str, ...] = ("fail_json", "exit_json")
EXIT_CALLER: str = "module_glue.proxy_module"

# Rule 10: the controller-side plugins (paths below plugins/) and the one file among them that
# may import the registry, a runner or the module glue.
CONTROLLER_SIDE_DIRS: tuple[str, ...] = ("inventory", "plugin_utils", "action")
PROVIDER_SESSION: str = "plugin_utils.provider_session"

# Rule 11: the module_utils files the controller may import: pure, importing only the standard
# library and each other (or optional libraries behind a guard: tracing).
CONTROLLER_MAY_IMPORT: tuple[str, ...] = (
    "config.keys",
    "config.yaml_reader",
    "helpers.bounded_file",
    "helpers.path_trust",
    "helpers.credential_files",
    "core.names",
    "core.placement",
    "runners.pool_split",
    "runners.pool_target",
    "helpers.proxy_auth",
    "telemetry.tracing",
    "helpers.uid_shards",
    "helpers.kube_answers",
    "core.squid_conf",
    # what those import in turn
    "core.errors",
    "helpers.excerpt",
    "helpers.sha512_crypt",
)

# Rule 12: the controller's one file that imports the kubernetes client (the others take
# ``client``, ``watch`` and ``ApiException`` from it).
CONTROLLER_KUBERNETES_HOME: str = "kube/client.py"
