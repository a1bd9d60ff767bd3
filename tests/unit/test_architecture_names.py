"""docs/architecture.md names only code that exists (issue 30: "the walk-through matches the code").

Every file, folder, class, method, function and module attribute the layers, the end-to-end call
and the controller walk-throughs quote in backticks is looked up in the source of plugins/ and
the controller's package (by AST, nothing imported): a file moved, a class renamed or a method
folded away without the page following fails here, naming the stale reference. Names that are
not ours (ansible-core's, Python's) and data names (spec fields, published file names) are listed
below; anything else must resolve.

The pictures (the fenced blocks under "## The picture", issue 38) are checked word by word: a
path must exist, a word must be a module, folder or class of ours (a dotted name or a call must
resolve like a quoted one), or one of the prose words listed in ``PICTURE_PROSE``; and every
module of the controller's package must be in a picture or in a table of the page, so a file
added, renamed or removed without the map following fails, naming it.
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


PICTURE = "## The picture"
#: words of the pictures that are not code; none may be a module or folder name of ours (a
#: module's name must stay checked: when the module goes, the picture must say so)
PICTURE_PROSE = frozenset(
    {
        *("API", "AWX", "Compute", "ConfigMap", "Engine", "Pod", "Proxy", "ProxyPool", "SDK", "SSH"),
        *("Squid", "VM", "a", "and", "any", "argument", "below", "call", "cloud-init"),
        *("documentation", "domain", "due", "every", "finalizer", "form", "from", "glue"),
        *("google-cloud-compute", "host", "installed", "installs", "inputs", "its", "kvm", "kvm2"),
        *("layer", "list", "module", "name", "objects", "of", "on", "one", "only", "over"),
        *("overlay", "own", "per", "picture", "plan", "provider's", "reached", "rule"),
        *("run", "runner", "same", "second", "seam", "server", "the", "through", "thread", "types"),
        *("watch", "ansible-playbook", "ansible-runner", "cache", "Events", "ProxyPools", "changes"),
        *("workers", "key", "snapshot", "then", "writes", "in", "calls", "no", "answer's", "each"),
        *("answer", "as", "it", "comes", "event", "their", "Services", "EndpointSlices"),
    }
)


def picture_blocks() -> list:
    """[(line number, line)] of the fenced blocks between "## The picture" and the next heading."""
    with open(PAGE, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    start = lines.index(PICTURE)
    out, fenced = [], False
    for number, line in enumerate(lines[start + 1 :], start + 2):
        if line.startswith("## "):
            break
        if line.startswith("```"):
            fenced = not fenced
        elif fenced:
            out.append((number, line))
    return out


PATH = re.compile(r"[\w.<>*-]*/[\w.<>*/-]*|\b\w+\.py\b")
WORD = re.compile(r"[A-Za-z_]\w*(?:[-'][\w]+)+|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(\()?")


def picture_path_exists(source: Source, path: str) -> bool:
    if not re.search(r"\w", path) or any(c in path for c in "<*"):  # an arrow's slash, a data path
        return True
    bases = (
        ROOT,
        PACKAGE,
        PLUGINS,
        os.path.join(PLUGINS, "module_utils"),
        os.path.join(PLUGINS, "module_utils", "providers"),
    )
    for base in bases:
        if os.path.exists(os.path.join(base, path)) or os.path.exists(os.path.join(base, path + ".py")):
            return True
    return path.endswith("/") and path.count("/") == 1 and path[:-1] in source.folders


def picture_word_exists(source: Source, word: str, call: bool) -> bool:
    if word in PICTURE_PROSE or "*" in word:
        return True
    if "." in word:
        return source.has_chain(word.split("."))
    if word in source.modules or word in source.folders or word in source.classes:
        return True
    return call and source.has_name(word)


def picture_misses(source: Source, lines: list | None = None) -> list:
    """["line N: name", ...] for every name of the pictures (or of ``lines``) that is not in the
    code."""
    misses = []
    for number, line in picture_blocks() if lines is None else lines:
        rest = line
        for path in PATH.findall(line):
            if not picture_path_exists(source, path):
                misses.append("line %d: %s" % (number, path))
            rest = rest.replace(path, " ", 1)
        for match in WORD.finditer(rest):
            word = match.group(0).rstrip("(")
            if not picture_word_exists(source, word, bool(match.group(1))):
                misses.append("line %d: %s" % (number, word))
    return misses


def package_modules() -> list:
    """Every module of the controller's package, as a path under it (``kube/client.py``)."""
    out = []
    for folder, _subdirs, names in os.walk(PACKAGE):
        for name in names:
            if name.endswith(".py") and name != "__init__.py":
                out.append(os.path.relpath(os.path.join(folder, name), PACKAGE))
    return sorted(out)


def mapped_modules() -> set:
    """The package's modules the page places: ``folder/file.py`` in a picture or a table, and the
    files of the folder table's rows (first cell the folder, ``(top)`` for the package itself)."""
    with open(PAGE, encoding="utf-8") as handle:
        text = handle.read()
    lines = [line for _n, line in picture_blocks()] + [
        row for row in text.splitlines() if row.startswith("|")
    ]
    found = set()
    for line in lines:
        found.update(re.findall(r"\b((?:\w+/)+\w+\.py)\b", line))
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2:
            head = re.fullmatch(r"\s*`(\w+)/`\s*", cells[1])
            if head or cells[1].strip() == "(top)":
                folder = head.group(1) + "/" if head else ""
                found.update(folder + name for name in re.findall(r"`(\w+\.py)`", "|".join(cells[2:])))
    return found


@pytest.fixture(scope="module")
def source() -> Source:
    return Source()


def test_every_name_the_walk_throughs_quote_exists(source):
    names = quoted_names()
    assert len(names) > 150  # the sections were found and read
    missing = [name for name in names if stale(source, name)]
    assert missing == [], "docs/architecture.md quotes names the code no longer has: %s" % missing


def test_every_name_in_the_pictures_exists(source):
    assert len(picture_blocks()) > 20  # the pictures were found and read
    misses = picture_misses(source)
    assert misses == [], (
        "docs/architecture.md's pictures name what the code does not have:\n  " + "\n  ".join(misses)
    )


def test_every_controller_module_is_on_the_map():
    placed = mapped_modules()
    missing = [path for path in package_modules() if path not in placed]
    assert missing == [], (
        "controller/egress_proxies_controller/ modules in neither a picture nor a table of "
        "docs/architecture.md (add each to its folder's row of the folder table):\n  " + "\n  ".join(missing)
    )


def test_the_pictures_prose_words_are_no_module_names(source):
    # A module name listed as prose would keep passing after the module is renamed.
    assert sorted(PICTURE_PROSE & (set(source.modules) | source.folders)) == []


def test_every_prose_word_is_in_a_picture():
    words = set()
    for _number, line in picture_blocks():
        words.update(m.group(0).rstrip("(") for m in WORD.finditer(PATH.sub(" ", line)))
    assert sorted(PICTURE_PROSE - words) == [], "PICTURE_PROSE lists words no picture uses"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("   core:    config_base · config_yaml · names", ["config_base", "config_yaml"]),
        (" kube/store.py ─▶ proxy/filed_replies.py", ["kube/store.py", "proxy/filed_replies.py"]),
        (" ProxyModule.no_such(spec) · NoSuchLoop", ["ProxyModule.no_such", "NoSuchLoop"]),
        (" kube/informer.py ─keys─▶ workqueue · the Squid Pod · registry.build(spec)", []),
    ],
)
def test_a_stale_picture_name_is_caught(source, line, expected):
    assert picture_misses(source, [(1, line)]) == ["line 1: %s" % name for name in expected]


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
