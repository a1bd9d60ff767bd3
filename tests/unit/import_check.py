"""The checker behind tests/unit/test_import_rules.py: every import of plugins/ and the controller,
read with ``ast`` at any depth (inside functions, ``try`` blocks, ``if`` branches), against the
contracts of tests/unit/import_contracts.py. Pure functions of (path, source) so the test can
also feed it small synthetic sources that break each rule.
"""

from __future__ import annotations

import ast
import dataclasses
import os
import sys
from collections.abc import Iterable, Iterator

from unit import import_contracts as c

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = "ansible_collections.crawl.egress_proxies.plugins"
CONTROLLER = "controller/egress_proxies_controller"
GUARD_NAMES = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


@dataclasses.dataclass(frozen=True)
class Violation:
    path: str
    line: int
    statement: str
    rule: int | str
    why: str

    def __str__(self) -> str:
        title = c.RULES.get(self.rule, "the contracts") if isinstance(self.rule, int) else self.rule
        rule = "rule %s (%s)" % (self.rule, title) if isinstance(self.rule, int) else title
        return "%s:%d: `%s` breaks %s: %s" % (self.path, self.line, self.statement, rule, self.why)


@dataclasses.dataclass(frozen=True)
class Import:
    line: int
    module: str  # the absolute name imported, or the relative one with its leading dots
    statement: str
    guarded: bool
    relative: bool = False
    candidates: tuple[str, ...] = ()  # ``from M import n``: M.n first (a submodule), then M


def _catches_import_error(handlers: list[ast.ExceptHandler]) -> bool:
    """Whether a ``try`` makes a missing library a handled case rather than an import crash."""
    for handler in handlers:
        kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        for kind in kinds:
            if kind is None or (isinstance(kind, ast.Name) and kind.id in GUARD_NAMES):
                return True
    return False


def imports(tree: ast.AST) -> list[Import]:
    """Every import statement at any depth, each with whether a ``try`` guards it."""
    found: list[Import] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(node.lineno, alias.name, "import %s" % alias.name, guarded))
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                candidates = (base + "." + alias.name, base) if node.module else (base + alias.name,)
                statement = "from %s import %s" % (base, alias.name)
                found.append(Import(node.lineno, base, statement, guarded, node.level > 0, candidates))
        elif isinstance(node, ast.Try | ast.TryStar):
            inner = guarded or _catches_import_error(node.handlers)
            for child in node.body:
                visit(child, inner)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, guarded)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def dynamic_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``importlib.import_module(...)`` and ``__import__(...)`` calls: Ansible cannot bundle them."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__"):
                yield node.lineno, "%s(...)" % name


def exit_calls(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) in c.EXIT_CALLS:
            yield node.lineno, ".%s(...)" % node.func.attr


def plugin_modules(root: str = ROOT) -> set[str]:
    """Every file below plugins/ by its importable name, relative to plugins/
    (``module_utils.providers.gcp.api``). The packages' ``__init__.py`` are empty: importing a
    folder itself reaches nothing, so folders are not in the set."""
    base = os.path.join(root, "plugins")
    found: set[str] = set()
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        rel = os.path.relpath(folder, base)
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                found.add(os.path.join(rel, name[:-3]).replace(os.sep, ".").removeprefix("./"))
    return found


def source_files(root: str = ROOT) -> list[str]:
    """Every .py under plugins/ and the controller package, relative to the repository."""
    paths = []
    for top in ("plugins", CONTROLLER):
        for folder, dirs, files in os.walk(os.path.join(root, top)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            paths += [os.path.relpath(os.path.join(folder, f), root) for f in files if f.endswith(".py")]
    return sorted(p.replace(os.sep, "/") for p in paths)


def layers_of(name: str) -> list[str]:
    """Every layer whose folders hold a module_utils name (one, in a sound contract)."""
    return [layer for layer, homes in c.LAYERS.items() if _under(name, homes)]


def layer_of(name: str) -> str | None:
    """The layer of a module_utils name, by its folder (``core.names`` -> core,
    ``providers.gcp.api`` -> providers/gcp)."""
    parts = name.split(".")
    if parts[0] == "providers":
        return "providers/" + parts[1] if len(parts) > 1 else "providers"
    found = layers_of(name)
    return found[0] if found else None


def provider_may_import() -> tuple[str, ...]:
    """Rule 5's allow-list: every helper and the core files named for providers."""
    return (*c.PROVIDER_MAY_IMPORT_CORE, *c.LAYERS["helpers"])


def files_under(known: set[str], names: Iterable[str]) -> list[str]:
    """The module_utils files an allow-list's names stand for (a folder stands for its files)."""
    return sorted(
        n.removeprefix("module_utils.")
        for n in known
        if n.startswith("module_utils.") and _under(n.removeprefix("module_utils."), names)
    )


def _under(name: str, homes: Iterable[str]) -> bool:
    return any(name == home or name.startswith(home + ".") for home in homes)


def _is_stdlib(module: str) -> bool:
    return module.split(".")[0] in sys.stdlib_module_names


def _ours(imp: Import, known: set[str]) -> str | None:
    """The plugins/-relative name an import of this collection reaches, or None if it names none."""
    for candidate in imp.candidates or (imp.module,):
        if candidate.startswith(PREFIX + "."):
            rest = candidate[len(PREFIX) + 1 :]
            if rest in known:
                return rest
    return None


class FileCheck:
    """The rules that apply to one file, by where it sits."""

    def __init__(self, path: str, source: str, known: set[str]) -> None:
        self.path = path
        self.known = known
        self.tree = ast.parse(source, filename=path)
        self.violations: list[Violation] = []
        rel = path.removeprefix("plugins/").removesuffix(".py").removesuffix("/__init__")
        self.in_plugins = path.startswith("plugins/")
        self.dotted = rel.replace("/", ".")  # module_utils.core.names, modules.proxy_gc, inventory.proxies
        self.kind = self.dotted.split(".")[0] if self.in_plugins else "controller"
        self.mu = self.dotted.removeprefix("module_utils.") if self.kind == "module_utils" else ""
        self.layer = layer_of(self.mu) if self.mu else None

    def fail(self, line: int, statement: str, rule: int | str, why: str) -> None:
        self.violations.append(Violation(self.path, line, statement, rule, why))

    def run(self) -> list[Violation]:
        bundled = self.kind in ("modules", "module_utils")
        if bundled:
            for line, call in dynamic_imports(self.tree):
                self.fail(line, call, 1, "a dynamic import is invisible to Ansible's bundling")
        if self.in_plugins and self.mu != c.EXIT_CALLER:
            for line, call in exit_calls(self.tree):
                self.fail(line, call, 9, "raise a core/errors.py error; ProxyModule makes it a result")
        for imp in imports(self.tree):
            self.check(imp)
        return self.violations

    def check(self, imp: Import) -> None:
        if self.kind == "controller":
            self.check_controller(imp)
            return
        if imp.relative:
            self.fail(imp.line, imp.statement, 1, "relative import; spell out %s..." % PREFIX)
            return
        top = imp.module.split(".")[0]
        if imp.module.startswith(PREFIX + ".") or imp.module == PREFIX:
            target = _ours(imp, self.known)
            if target is None:
                self.fail(imp.line, imp.statement, 1, "names no file under plugins/")
            else:
                self.check_internal(imp, target)
        elif top in ("plugins", "egress_proxies") or imp.module.startswith("ansible_collections.crawl."):
            self.fail(imp.line, imp.statement, 1, "spell out the full %s... path" % PREFIX)
        elif top == "ansible":
            self.check_ansible(imp)
        elif top not in c.NOT_THIRD_PARTY and not _is_stdlib(imp.module):
            self.check_third_party(imp, top)
        elif self.kind == "modules" and top not in ("__future__",):
            self.fail(imp.line, imp.statement, 2, "a module holds no logic of its own")

    def check_controller(self, imp: Import) -> None:
        if imp.relative:
            return
        if imp.module.startswith("ansible_collections.") and not any(
            i.relative and i.statement.endswith(" import collection") and i.line < imp.line
            for i in imports(self.tree)
        ):
            self.fail(imp.line, imp.statement, 13, "import collection first: it sets up ansible's loader")
        top = imp.module.split(".")[0]
        if top == "kubernetes" and not self.path.endswith("/" + c.CONTROLLER_KUBERNETES_HOME):
            self.fail(imp.line, imp.statement, 12, "take it from %s" % c.CONTROLLER_KUBERNETES_HOME)
        if imp.module.startswith("ansible_collections.crawl.egress_proxies") or top == "plugins":
            target = _ours(imp, self.known) or imp.module
            name = target.removeprefix("module_utils.")
            if not target.startswith("module_utils.") or not _under(name, c.CONTROLLER_MAY_IMPORT):
                self.fail(imp.line, imp.statement, 11, "%s is not in CONTROLLER_MAY_IMPORT" % target)

    def check_ansible(self, imp: Import) -> None:
        """ansible-core: only the glue (AnsibleModule), a provider's HTTP client, the plugins."""
        if self.kind == "modules":
            self.fail(imp.line, imp.statement, 2, "a module imports only the glue and its runner")
        elif self.layer in ("runners",):
            self.fail(imp.line, imp.statement, 3, "runners serve places with no AnsibleModule")
        elif self.layer and self.layer.startswith("providers"):
            if not _under(imp.module, c.PROVIDER_MAY_IMPORT_ANSIBLE):
                allowed = ", ".join(c.PROVIDER_MAY_IMPORT_ANSIBLE)
                self.fail(imp.line, imp.statement, 5, "of ansible-core providers import only " + allowed)
        elif self.layer in ("core", "helpers", "registry"):
            self.fail(imp.line, imp.statement, 6, "the core and the helpers do not depend on ansible-core")

    def check_third_party(self, imp: Import, top: str) -> None:
        if not imp.guarded:
            self.fail(imp.line, imp.statement, 7, "not inside try: ... except ImportError")
        homes = c.THIRD_PARTY_HOMES.get(top)
        if homes is None:
            self.fail(imp.line, imp.statement, 7, "%s has no home in THIRD_PARTY_HOMES" % top)
        elif not (self.mu and _under(self.mu, homes)):
            self.fail(imp.line, imp.statement, 7, "%s is imported only in %s" % (top, ", ".join(homes)))

    def check_internal(self, imp: Import, target: str) -> None:
        """One import of this collection's code, by the importer's and the target's layer."""
        fail = self.fail
        if self.kind in ("modules", "module_utils") and not target.startswith("module_utils"):
            fail(imp.line, imp.statement, 1, "Ansible bundles only module_utils with a module")
            return
        name = target.removeprefix("module_utils.")
        to = layer_of(name) if target.startswith("module_utils.") else None
        to_provider = bool(to and to.startswith("providers"))
        if self.kind == "modules":
            runner = c.MODULE_RUNNERS.get(self.dotted.removeprefix("modules."))
            if name not in c.MODULE_GLUE_FOR_MODULES and name != runner:
                fail(
                    imp.line,
                    imp.statement,
                    2,
                    "allowed: %s and its runner %s" % (", ".join(c.MODULE_GLUE_FOR_MODULES), runner),
                )
        elif self.kind in c.CONTROLLER_SIDE_DIRS:
            if to_provider:
                fail(imp.line, imp.statement, 10, "a provider package, outside the registry")
            elif to in ("registry", "runners", "module glue") and self.dotted != c.PROVIDER_SESSION:
                fail(imp.line, imp.statement, 10, "%s (%s) only through %s" % (name, to, c.PROVIDER_SESSION))
        elif self.layer and self.layer.startswith("providers/"):
            if to and to.startswith("providers/"):
                if to != self.layer:
                    fail(imp.line, imp.statement, 5, "another provider's package (%s)" % to)
            elif not _under(name, provider_may_import()):
                fail(
                    imp.line,
                    imp.statement,
                    5,
                    "%s (%s): not a helper nor in PROVIDER_MAY_IMPORT_CORE" % (name, to),
                )
        elif to_provider:
            if self.layer != "registry":
                rule = {"runners": 3, "core": 6, "helpers": 6}.get(self.layer or "", 4)
                fail(imp.line, imp.statement, rule, "a provider package, outside registry.py")
            elif not name.endswith(".provider_type"):
                fail(imp.line, imp.statement, 4, "the registry imports only a package's provider_type")
        elif self.layer == "runners":
            if to == "registry" or (to == "module glue" and name not in c.RUNNER_MAY_IMPORT_GLUE):
                fail(imp.line, imp.statement, 3, "%s (%s): providers come from ProxyModule" % (name, to))
        elif self.layer in ("core", "helpers", "registry") and to in ("runners", "module glue"):
            fail(imp.line, imp.statement, 6, "%s is %s" % (name, to))


def check_source(path: str, source: str, known: set[str]) -> list[Violation]:
    """The import rules broken by one file (``path`` relative to the repository)."""
    return FileCheck(path, source, known).run()


def check_contracts(root: str = ROOT) -> list[Violation]:
    """The contracts themselves against the tree: every file placed once, no stale names,
    the provider allow-list and the controller's list closed under their own imports."""
    known = plugin_modules(root)
    problems: list[Violation] = []

    def fail(path: str, rule: int | str, why: str) -> None:
        problems.append(Violation(path, 0, "-", rule, why))

    contracts = "tests/unit/import_contracts.py"
    files = {
        n.removeprefix("module_utils.")
        for n in known
        if n.startswith("module_utils.") and not n.startswith("module_utils.providers.")
    }
    placed: dict[str, str] = {}
    for layer, homes in c.LAYERS.items():
        for home in homes:
            if not files_under(known, [home]):
                fail(contracts, "the layers", "%s (%s) names no module_utils file or folder" % (home, layer))
    for name in sorted(files):
        found = layers_of(name)
        if len(found) > 1:
            fail(contracts, "the layers", "%s is in both %s" % (name, " and ".join(found)))
        elif not found:
            path = "plugins/module_utils/%s.py" % name.replace(".", "/")
            fail(path, "the layers", "in no layer: place its folder in LAYERS")
        else:
            placed[name] = found[0]
    modules = {n.removeprefix("modules.") for n in known if n.startswith("modules.")}
    for name in sorted(modules ^ c.MODULE_RUNNERS.keys()):
        fail("plugins/modules/%s.py" % name, 2, "modules and MODULE_RUNNERS differ")
    for module, runner in c.MODULE_RUNNERS.items():
        if placed.get(runner) != "runners":
            fail(contracts, 2, "%s's runner %s is not in the runners layer" % (module, runner))
    for name in c.PROVIDER_MAY_IMPORT_CORE:
        if placed.get(name) != "core":
            fail(contracts, 5, "PROVIDER_MAY_IMPORT_CORE names %s, not a core file" % name)
    for top, homes in c.THIRD_PARTY_HOMES.items():
        for home in homes:
            if not any(_under(name, ["module_utils." + home]) for name in known):
                fail(contracts, 7, "the home %s of %s names no file" % (home, top))
    for name in c.CONTROLLER_MAY_IMPORT:
        if name not in placed:
            fail(contracts, 11, "CONTROLLER_MAY_IMPORT names %s, no module_utils file" % name)
    problems += _closed(root, known, provider_may_import(), 5, stdlib_only=False)
    problems += _closed(root, known, c.CONTROLLER_MAY_IMPORT, 11, stdlib_only=True)
    return problems


def _closed(
    root: str, known: set[str], names: Iterable[str], rule: int, stdlib_only: bool
) -> list[Violation]:
    """An allow-list is only as narrow as what its files import in turn."""
    allowed = tuple(names)
    problems: list[Violation] = []
    for name in files_under(known, allowed):
        path = "plugins/module_utils/%s.py" % name.replace(".", "/")
        try:
            with open(os.path.join(root, path), encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), filename=path)
        except OSError:
            continue
        for imp in imports(tree):
            target = _ours(imp, known)
            if target is not None:
                if not _under(target.removeprefix("module_utils."), allowed):
                    why = "imports %s, which its allow-list does not hold" % target
                    problems.append(Violation(path, imp.line, imp.statement, rule, why))
            elif stdlib_only and not _dependency_free(imp):
                why = "the controller's files import only the standard library, each other and"
                why += " guarded optional libraries"
                problems.append(Violation(path, imp.line, imp.statement, rule, why))
    return problems


def _dependency_free(imp: Import) -> bool:
    """Importable wherever Python is: the standard library, or a library behind its guard."""
    top = imp.module.split(".")[0]
    if top == "__future__" or _is_stdlib(imp.module):
        return True
    return imp.guarded and top not in c.NOT_THIRD_PARTY


def check_tree(root: str = ROOT) -> list[Violation]:
    """Every rule over every file, and the contracts against the tree."""
    known = plugin_modules(root)
    found = check_contracts(root)
    for path in source_files(root):
        with open(os.path.join(root, path), encoding="utf-8") as handle:
            found += check_source(path, handle.read(), known)
    return found
