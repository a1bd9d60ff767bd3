# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Reading a providers file with bounds: a hostile or broken file fails fast and says where.

A plain ``yaml.safe_load`` crashes on deep nesting (recursion), on a non-UTF-8 byte (a
traceback without the path), accepts duplicate keys (the last one silently wins), expands an
alias bomb into gigabytes once anything walks it, and reads a 50 MB file for 20 seconds. Here
the file is read up to a size limit, decoded strictly, its events are scanned for nesting
depth before anything recursive runs, the composed graph is measured with aliases expanded
(without expanding them), and duplicate keys are refused. Every failure is one
``path: problem`` line naming the line and column.
"""

from __future__ import annotations

import os
import stat

try:
    import yaml

    YAML_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
    yaml = None
    YAML_IMPORT_ERROR = "PyYAML is required to read a providers file"

MAX_FILE_BYTES = 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 100_000


class FileProblem(Exception):
    """The file cannot be read as a bounded YAML document; the message has no path prefix."""


def read_text(path: str) -> str:
    """The file's text, at most ``MAX_FILE_BYTES``, strictly UTF-8.

    Opened without blocking and checked to be a regular file before a byte is read: a FIFO
    (or a device) would otherwise hold the module until something writes to it, or forever.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise FileProblem("cannot read providers file: %s" % (exc.strerror or exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileProblem("providers file is not a regular file (it is a %s)" % _kind(mode))
        os.set_blocking(fd, True)
        data = _read_bounded(fd, MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise FileProblem("cannot read providers file: %s" % (exc.strerror or exc)) from None
    finally:
        os.close(fd)
    if len(data) > MAX_FILE_BYTES:
        raise FileProblem("providers file is larger than %d bytes" % MAX_FILE_BYTES)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise FileProblem(
            "not UTF-8: byte 0x%02x at line %d, column %d (offset %d)"
            % (data[exc.start], line, column, exc.start)
        ) from None


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return name
    return "special file"


def _read_bounded(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, min(65536, limit - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


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
                        "duplicate key %r at %s (also at %s)"
                        % (str(key)[:60], _where(key_node.start_mark), _where(seen[key]))
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


def _short_yaml_error(exc) -> str:
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    return "%s (%s)" % (str(problem)[:200], _where(mark)) if mark is not None else str(problem)[:200]
