# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Reading a providers file with bounds: a hostile or broken file fails fast and says where.

A plain ``yaml.safe_load`` crashes on deep nesting (recursion), on a non-UTF-8 byte (a
traceback without the path), accepts duplicate keys (the last one silently wins), expands an
alias bomb into gigabytes once anything walks it, and reads a 50 MB file for 20 seconds. Here
the file is read up to a size limit, decoded strictly, its events are scanned for nesting
depth before anything recursive runs, the composed graph is measured with aliases expanded
(without expanding them), and duplicate keys are refused. Every failure is one
``path: problem`` line naming the line and column, never the content (issue 40): PyYAML's copy
of the offending line, and whatever it quotes (an alias, an anchor, a tag), is dropped. The
file itself is read by helpers/bounded_file.py, which the controller uses too.
"""

from __future__ import annotations

import re

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import bounded_file

try:
    import yaml

    YAML_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None
    YAML_IMPORT_ERROR = "PyYAML is required to read a providers file"

MAX_FILE_BYTES = bounded_file.MAX_FILE_BYTES
MAX_DEPTH = 32
MAX_NODES = 100_000

# One exception for reading and parsing, so a caller catches one thing.
FileProblem = bounded_file.FileProblem

_SHORT_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")


def read_text(path: str, what: str = "providers file", trusted: bool = False) -> str:
    """The file's text (helpers/bounded_file.py: regular file, size cap, strict UTF-8)."""
    return bounded_file.read_text(path, what, trusted)


def load_file(path: str, what: str, trusted: bool = False):
    """The document of the file at ``path``, read and parsed within bounds, or ``FileProblem``."""
    return load(read_text(path, what, trusted))


def _where(mark) -> str:
    return "line %d, column %d" % (mark.line + 1, mark.column + 1) if mark is not None else "?"


if yaml is not None:

    class _Loader(yaml.SafeLoader):
        """SafeLoader that refuses a key given twice in one mapping."""

        def construct_mapping(self, node, deep=False):
            seen = {}
            for key_node, _value in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    hash(key)
                except TypeError:
                    raise FileProblem(
                        "a mapping key must be a scalar (%s)" % _where(key_node.start_mark)
                    ) from None
                if key in seen:
                    raise FileProblem(
                        "duplicate key %s at %s (also at %s)"
                        % (_key_name(key), _where(key_node.start_mark), _where(seen[key]))
                    )
                seen[key] = key_node.start_mark
            return super().construct_mapping(node, deep=deep)


def _check_depth(text: str) -> None:
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise FileProblem(
                    "nested deeper than %d levels at %s" % (MAX_DEPTH, _where(event.start_mark))
                )
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            depth -= 1


def _expanded_size(root) -> int:
    """How many nodes the document has with every alias expanded, computed without expanding."""
    sizes = {}
    order, stack = [], [root]
    while stack:  # post-order without recursion: children first
        node = stack.pop()
        if id(node) in sizes:
            continue
        sizes[id(node)] = None
        order.append(node)
        for child in _children(node):
            if id(child) not in sizes:
                stack.append(child)
    total = {}
    for node in reversed(order):
        total[id(node)] = min(MAX_NODES + 1, 1 + sum(total.get(id(c), 1) for c in _children(node)))
    return total[id(root)]


def _children(node) -> list:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load(text: str):
    """The document of ``text`` (``None`` when empty), or ``FileProblem``."""
    if YAML_IMPORT_ERROR:
        raise FileProblem(YAML_IMPORT_ERROR)
    try:
        _check_depth(text)
        loader = _Loader(text)
        try:
            root = loader.get_single_node()
            if root is None:
                return None
            if _expanded_size(root) > MAX_NODES:
                raise FileProblem(
                    "the document expands to more than %d values (aliases that repeat too much)" % MAX_NODES
                )
            return loader.construct_document(root)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise FileProblem("not valid YAML: %s" % _short_yaml_error(exc)) from None


def _key_name(key) -> str:
    """A key is named only when it looks like a field name: a long or odd one may be a secret
    someone pasted on the wrong line."""
    return repr(key) if isinstance(key, str) and _SHORT_KEY.fullmatch(key) else "(not shown)"


def _short_yaml_error(exc) -> str:
    """PyYAML's problem and position, without its copy of the line and without anything it
    quotes from the content (an alias, an anchor, a tag or a character)."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or type(exc).__name__
    problem = " ".join(_QUOTED.sub(_keep_syntax, str(problem)).split())[:200]
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return "%s (%s)" % (problem, _where(mark)) if mark is not None else problem


def _keep_syntax(match) -> str:
    """A quoted token kind (``'<scalar>'``) or one character (``','``) stays: it names syntax,
    not content; anything longer the parser quoted (an alias, an anchor, a tag) goes."""
    inner = match.group(0)[1:-1]
    return match.group(0) if len(inner) <= 2 or re.fullmatch(r"<[a-z ]+>", inner) else ""


_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*"')


def yaml_error_text(exc: BaseException) -> str | None:
    """For an error PyYAML raised inside a library that parses a file itself (the kubernetes
    client's kubeconfig loader), the content-free description ``load`` would give; ``None`` for
    any other error."""
    if yaml is None or not isinstance(exc, yaml.YAMLError):
        return None
    return "not valid YAML: %s" % _short_yaml_error(exc)
