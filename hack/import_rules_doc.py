"""Render the import contracts (tests/unit/import_contracts.py) into docs/architecture.md.

The rules' prose is written by hand; the layers and the allow-lists the rules name are data,
and this replaces the text between the two CONTRACTS markers of the page's "Import rules"
section with them, so the page lists exactly what tests/unit/test_import_rules.py enforces
(that test fails while the page is stale). `--check` only says whether the page is current.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "architecture.md")
BEGIN = "<!-- CONTRACTS BEGIN (hack/import_rules_doc.py from tests/unit/import_contracts.py) -->"
END = "<!-- CONTRACTS END -->"
HEADING = "## Import rules"


def _contracts():
    """tests/unit/import_contracts.py, loaded by its path: it is data, with no imports of its own."""
    path = os.path.join(ROOT, "tests", "unit", "import_contracts.py")
    spec = importlib.util.spec_from_file_location("import_contracts", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


c = _contracts()


def names(items) -> str:
    return ", ".join("`%s`" % item for item in items) or "none"


def provider_packages() -> dict[str, list[str]]:
    """Each provider package and its files, read from the tree (a package needs no entry)."""
    base = os.path.join(ROOT, "plugins", "module_utils", "providers")
    packages = {}
    for name in sorted(os.listdir(base)):
        folder = os.path.join(base, name)
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            files = sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".py") and f != "__init__.py")
            packages[name] = files
    return packages


def home_files(home: str) -> str:
    """A layer's folder as ``folder/``: its files, read from the tree; a top-level file as itself."""
    folder = os.path.join(ROOT, "plugins", "module_utils", home)
    if not os.path.isdir(folder):
        return "`%s`" % home
    files = sorted(f[:-3] for f in os.listdir(folder) if f.endswith(".py") and f != "__init__.py")
    return "`%s/`: %s" % (home, names(files))


def render() -> str:
    """The text between the markers."""
    lines = [
        "Where every file of `plugins/module_utils/` belongs: a file's folder is its layer (a new"
        " folder fails `tests/unit/test_import_rules.py` until it is placed in a layer):",
        "",
        "| Layer | Folders and their files | What it holds |",
        "|---|---|---|",
    ]
    for layer, homes in c.LAYERS.items():
        lines.append("| %s | %s | %s |" % (layer, "; ".join(map(home_files, homes)), c.LAYER_PURPOSE[layer]))
    for package, files in provider_packages().items():
        lines.append("| providers/%s | %s | one provider package (rule 5) |" % (package, names(files)))
    runners = ", ".join("`%s` → `%s`" % pair for pair in c.MODULE_RUNNERS.items())
    homes = "; ".join("`%s`: %s" % (top, names(where)) for top, where in c.THIRD_PARTY_HOMES.items())
    lines += [
        "",
        "The allow-lists the rules name:",
        "",
        "- Rule 2, each module's runner: %s; besides it a module imports only %s."
        % (runners, names(c.MODULE_GLUE_FOR_MODULES)),
        "- Rule 3, the module glue a runner may import: %s." % names(c.RUNNER_MAY_IMPORT_GLUE),
        "- Rule 5, what a provider package may import besides its own package: every helper and"
        " the core files %s; of ansible-core only %s."
        % (names(c.PROVIDER_MAY_IMPORT_CORE), names(c.PROVIDER_MAY_IMPORT_ANSIBLE)),
        "- Rule 7, where each third-party library may be imported (a file, or any file of a"
        " package): %s." % homes,
        "- Rule 11, the `module_utils` files the controller may import: %s." % names(c.CONTROLLER_MAY_IMPORT),
    ]
    for rule, why in c.NOT_CHECKED.items():
        lines.append("- Rule %d is not checked statically: %s." % (rule, why))
    return "\n".join(lines)


def rewrite(text: str) -> str:
    """``text`` with the block between the markers replaced by ``render()``."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + render() + "\n" + text[end:]


def read() -> str:
    with open(DOC, encoding="utf-8") as handle:
        return handle.read()


def section(text: str) -> str:
    """The "Import rules" section of the page, up to the next heading of its level."""
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    return text[start : end if end >= 0 else len(text)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="only say whether the page is current")
    args = parser.parse_args()
    text = read()
    new = rewrite(text)
    if args.check:
        print("current" if new == text else "stale: run python hack/import_rules_doc.py")
        return 0 if new == text else 1
    if new != text:
        with open(DOC, "w", encoding="utf-8") as handle:
            handle.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
