"""docs/architecture.md names only code that exists (issue 30: "the walk-through matches the code").

Every file, folder, class, method, function and module attribute the layers, the end-to-end call
and the controller walk-throughs quote in backticks is looked up in the source of plugins/ and
the controller's package (by AST, nothing imported): a file moved, a class renamed or a method
folded away without the page following fails here, naming the stale reference. Names that are
not ours (ansible-core's, Python's) and data names (spec fields, published file names) are listed
below; anything else must resolve.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "controller", "egress_proxies_controller")
PLUGINS = os.path.join(ROOT, "plugins")
PAGE = os.path.join(ROOT, "docs", "architecture.md")
SECTIONS = ("## The layers", "## Import rules")  # from the first heading up to the second

#: quoted names that belong to ansible-core or Python, not to this repository
NOT_OURS = {
    "AnsibleModule",
    "AnsibleParserError",
    "Exception",
    "KeyboardInterrupt",
    "_parse_returned_data",
    "module.warn",
}
#: heads of dotted names that are object fields, not code
FIELD_HEADS = {"spec", "status", "metadata", "template"}
DATA_SUFFIXES = (".json", ".txt", ".yml", ".yaml")


class Source:
    """Every Python file under plugins/ and the package: module names, their top-level names,
    classes and their attributes (methods, class-level and ``self.`` assignments)."""

    def __init__(self):
        self.files, self.folders = [], set()
        self.modules: dict = {}
        self.classes: dict = {}
        for base in (PACKAGE, PLUGINS):
            for folder, _subdirs, names in os.walk(base):
                self.folders.add(os.path.basename(folder))
                self.files += [os.path.join(folder, n) for n in names if n.endswith(".py")]
        for path in self.files:
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            name = os.path.basename(path)[:-3]
            self.modules.setdefault(name, set()).update(_top_names(tree))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    self.classes.setdefault(node.name, set()).update(_class_names(node))

    def has_path(self, quoted: str) -> bool:
        for base in (ROOT, PACKAGE, os.path.join(PLUGINS, "module_utils"), os.path.join(ROOT, "controller")):
            if os.path.exists(os.path.join(base, quoted)):
                return True
        name = quoted.rstrip("/")
        if quoted.endswith("/"):
            return name in self.folders
        return any(path.endswith(os.sep + name) for path in self.files)

    def has_chain(self, parts: list) -> bool:
        head, rest = parts[0], parts[1:]
        if head in self.classes:
            return not rest or (rest[0] in self.classes[head] and len(rest) == 1)
        if head in self.modules:
            if not rest:
                return True
            if rest[0] in self.classes and rest[0] in self.modules[head]:
                return self.has_chain(rest)
            return len(rest) == 1 and rest[0] in self.modules[head]
        return False

    def has_name(self, name: str) -> bool:
        return any(name in names for names in self.modules.values()) or any(
            name in names for names in self.classes.values()
        )


def _assigned(node) -> list:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = []
    for target in targets:
        for leaf in target.elts if isinstance(target, ast.Tuple) else [target]:
            if isinstance(leaf, ast.Name):
                names.append(leaf.id)
            elif (
                isinstance(leaf, ast.Attribute)
                and isinstance(leaf.value, ast.Name)
                and leaf.value.id == "self"
            ):
                names.append(leaf.attr)
    return names


def _top_names(tree: ast.Module) -> set:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            names.update(_assigned(node))
    return names


def _class_names(cls: ast.ClassDef) -> set:
    names = set()
    for node in ast.walk(cls):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            names.update(_assigned(node))
    return names


def quoted_names() -> list:
    with open(PAGE, encoding="utf-8") as handle:
        text = handle.read()
    start, end = text.index(SECTIONS[0]), text.index(SECTIONS[1])
    return sorted(set(re.findall(r"`([^`\s]+)`", text[start:end])))


def stale(source: Source, quoted: str) -> bool:
    """Whether ``quoted`` looks like a reference to our code and names nothing that exists."""
    if quoted in NOT_OURS or any(c in quoted for c in "<*$") or quoted.startswith("-"):
        return False
    if quoted.startswith("tests/"):
        return not os.path.exists(os.path.join(ROOT, quoted))
    if quoted.endswith(".py") or quoted.endswith("/"):
        return not source.has_path(quoted)
    name = quoted[:-2] if quoted.endswith("()") else quoted
    if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", name):
        if name.split(".")[0] in FIELD_HEADS or name.endswith(DATA_SUFFIXES) or name.startswith("crawl."):
            return False
        return not source.has_chain(name.split("."))
    if name.startswith("_") or quoted.endswith("()"):
        return not source.has_name(name)
    if re.fullmatch(r"[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+", name):  # CamelCase: a class of ours
        return name not in source.classes and not _is_string_in_code(source, name)
    return False


def _is_string_in_code(source: Source, name: str) -> bool:
    """A condition type or reason (Ready, PublishFailed, ...) is quoted as the string it is."""
    return any(('"%s"' % name) in _text(path) for path in source.files)


_TEXTS: dict = {}


def _text(path: str) -> str:
    if path not in _TEXTS:
        with open(path, encoding="utf-8") as handle:
            _TEXTS[path] = handle.read()
    return _TEXTS[path]


@pytest.fixture(scope="module")
def source() -> Source:
    return Source()


def test_every_name_the_walk_throughs_quote_exists(source):
    names = quoted_names()
    assert len(names) > 150  # the sections were found and read
    missing = [name for name in names if stale(source, name)]
    assert missing == [], "docs/architecture.md quotes names the code no longer has: %s" % missing


@pytest.mark.parametrize(
    "quoted",
    [
        "pool_members.MemberIndex",  # a class in the wrong module
        "ProxyController._apply_every_answer",  # a method that does not exist
        "kube/store.py",  # a file that does not exist
        "Informer.store",  # a method that was removed
        "_no_such_helper",
        "NoSuchController",
    ],
)
def test_a_stale_reference_is_caught(source, quoted):
    assert stale(source, quoted)


@pytest.mark.parametrize(
    "quoted",
    [
        "members.MemberIndex",
        "ProxyController._work",
        "kube/own_writes.py",
        "client.Kube.write_status",
        "Ready",
    ],
)
def test_a_current_reference_passes(source, quoted):
    assert not stale(source, quoted)
