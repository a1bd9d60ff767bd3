"""A small PromQL parser for the tests of the shipped dashboard and alerts: the names each uses.

``parse(expr)`` checks the expression against the PromQL grammar the project's queries use
(selectors with matchers, ranges and subqueries, offsets, functions and aggregations with
``by``/``without``, binary operators with ``bool``, ``on``/``ignoring`` and
``group_left``/``group_right``, numbers, strings) and answers what it names: every selector's
metric name with the label names of its matchers, and every label name a grouping clause names.
A syntax error raises ``PromQLError`` with the position. Grafana's ``$variables`` are accepted
where Grafana substitutes them in the shipped files: inside strings and range brackets.
"""

from __future__ import annotations

import dataclasses
import re

AGGREGATIONS = {
    "sum", "min", "max", "avg", "count", "group", "stddev", "stdvar", "topk", "bottomk", "quantile",
    "count_values",
}  # fmt: skip
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp", "clamp_max",
    "clamp_min", "count_over_time", "delta", "deriv", "exp", "floor", "histogram_quantile", "idelta",
    "increase", "irate", "last_over_time", "ln", "max_over_time", "min_over_time", "present_over_time",
    "quantile_over_time", "rate", "resets", "round", "scalar", "sort", "sort_desc", "sqrt",
    "sum_over_time", "time", "timestamp", "vector",
}  # fmt: skip
BINARY = ["==", "!=", ">=", "<=", ">", "<", "+", "-", "*", "/", "%", "^", "and", "or", "unless", "atan2"]
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset"}
COMPARISONS = {"==", "!=", ">=", "<=", ">", "<"}
DURATION = r"(?:\d+(?:ms|s|m|h|d|w|y))+|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?"
RANGE = re.compile(r"^\s*(%s)\s*(?::\s*(%s)?\s*)?$" % (DURATION, DURATION))
TOKEN = re.compile(
    r"""\s*(?:
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?![A-Za-z_:])|0[xX][0-9a-fA-F]+|[Ii]nf|NaN)
  | (?P<duration>\d+(?:ms|s|m|h|d|w|y)(?:\d+(?:ms|s|m|h|d|w|y))*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>==|!=|>=|<=|=~|!~|[-+*/%^<>=(){},@])
    )""",
    re.X,
)


class PromQLError(ValueError):
    pass


@dataclasses.dataclass
class Names:
    selectors: list  # (metric name, frozenset of matcher label names)
    grouping: set  # label names in by/without/on/ignoring/group_left/group_right


def tokenize(expr: str) -> list:
    out, pos = [], 0
    while pos < len(expr):
        if expr[pos:].strip() == "":
            break
        if expr[pos:].lstrip().startswith("#"):  # a comment runs to the end of the line
            pos = expr.find("\n", pos) + 1 if "\n" in expr[pos:] else len(expr)
            continue
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise PromQLError("unexpected %r at %d in %r" % (expr[pos : pos + 10], pos, expr))
        kind = m.lastgroup
        out.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    out.append(("end", "", len(expr)))
    return out


class _Parser:
    def __init__(self, expr: str):
        self.expr, self.tokens, self.i = expr, tokenize(expr), 0
        self.names = Names([], set())

    def peek(self, offset: int = 0) -> tuple:
        return self.tokens[min(self.i + offset, len(self.tokens) - 1)]

    def take(self) -> tuple:
        token = self.peek()
        self.i += 1
        return token

    def fail(self, what: str):
        kind, text, pos = self.peek()
        raise PromQLError("%s, found %s %r at %d in %r" % (what, kind, text, pos, self.expr))

    def expect(self, text: str) -> None:
        if self.peek()[1] != text:
            self.fail("expected %r" % text)
        self.take()

    def is_binary(self) -> bool:
        kind, text, _pos = self.peek()
        return (kind == "op" and text in BINARY) or (kind == "ident" and text in BINARY)

    def expression(self) -> None:
        self.unary()
        while self.is_binary():
            op = self.take()[1]
            if self.peek()[1] == "bool":
                if op not in COMPARISONS:
                    self.fail("bool after a non-comparison %r" % op)
                self.take()
            if self.peek()[1] in ("on", "ignoring"):
                self.take()
                self.labels()
                if self.peek()[1] in ("group_left", "group_right"):
                    self.take()
                    if self.peek()[1] == "(":
                        self.labels()
            self.unary()

    def unary(self) -> None:
        while self.peek()[1] in ("-", "+"):
            self.take()
        self.primary()
        while True:
            kind, text, _pos = self.peek()
            if kind == "range":
                self.take()
                if not RANGE.match(text[1:-1]):
                    self.fail("bad range %r" % text)
            elif text == "offset":
                self.take()
                if self.peek()[1] == "-":
                    self.take()
                if self.take()[0] != "duration":
                    self.i -= 1
                    self.fail("expected a duration after offset")
            elif text == "@":
                self.take()
                if self.peek()[0] == "number":
                    self.take()
                elif self.peek()[1] in ("start", "end"):
                    self.take()
                    self.expect("(")
                    self.expect(")")
                else:
                    self.fail("expected a time after @")
            else:
                return

    def label_list(self, opening: str, closing: str, after_name=lambda: None) -> list:
        """``opening`` label names (each followed by what ``after_name`` reads), comma-separated,
        a trailing comma allowed, then ``closing``."""
        self.expect(opening)
        names = []
        while self.peek()[1] != closing:
            kind, text, _pos = self.take()
            if kind != "ident":
                self.i -= 1
                self.fail("expected a label name")
            after_name()
            names.append(text)
            if self.peek()[1] == ",":
                self.take()
            elif self.peek()[1] != closing:
                self.fail("expected ',' or %r" % closing)
        self.take()
        return names

    def labels(self) -> list:
        names = self.label_list("(", ")")
        self.names.grouping.update(names)
        return names

    def matcher_value(self) -> None:
        if self.peek()[1] not in ("=", "!=", "=~", "!~"):
            self.fail("expected a matcher operator")
        self.take()
        if self.take()[0] != "string":
            self.i -= 1
            self.fail("expected a string value")

    def matchers(self) -> set:
        return set(self.label_list("{", "}", self.matcher_value))

    def call_args(self) -> None:
        self.expect("(")
        if self.peek()[1] != ")":
            self.expression()
            while self.peek()[1] == ",":
                self.take()
                self.expression()
        self.expect(")")

    def primary(self) -> None:
        kind, text, _pos = self.peek()
        if kind in ("number", "string"):
            self.take()
        elif text == "(":
            self.take()
            self.expression()
            self.expect(")")
        elif text == "{":
            names = self.matchers()
            if "__name__" not in names:
                self.fail("a selector without a metric name")
        elif kind == "ident" and text in AGGREGATIONS and self.peek(1)[1] in ("(", "by", "without"):
            self.take()
            if self.peek()[1] in ("by", "without"):
                self.take()
                self.labels()
            self.call_args()
            if self.peek()[1] in ("by", "without"):
                self.take()
                self.labels()
        elif kind == "ident" and self.peek(1)[1] == "(":
            if text not in FUNCTIONS:
                self.fail("unknown function %r" % text)
            self.take()
            self.call_args()
        elif kind == "ident" and text not in BINARY and text not in KEYWORDS:
            self.take()
            names = self.matchers() if self.peek()[1] == "{" else set()
            self.names.selectors.append((text, frozenset(names)))
        else:
            self.fail("expected an expression")


def parse(expr: str) -> Names:
    parser = _Parser(expr)
    parser.expression()
    if parser.peek()[0] != "end":
        parser.fail("expected the end of the expression")
    return parser.names


def scrape_labels(text: str) -> dict:
    """Sample name -> every label name it carries, from a Prometheus text scrape (histograms'
    ``_bucket``, ``_sum`` and ``_count`` samples are names of their own, ``le`` on the buckets)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, set()).update(sample.labels)
    return out


def unknown_names(expr: str, scraped: dict) -> list:
    """What ``expr`` names that the scrape (``scrape_labels``) lacks: metric names with no
    sample, matcher labels no sample of that metric carries, grouping labels that none of the
    expression's metrics carries. Empty when every name exists."""
    names = parse(expr)
    problems = []
    carried = set()
    for metric, labels in names.selectors:
        if metric not in scraped:
            problems.append("metric %s" % metric)
            continue
        carried |= scraped[metric]
        problems += ["label %s of %s" % (label, metric) for label in sorted(labels - scraped[metric])]
    problems += ["grouping label %s" % label for label in sorted(names.grouping - carried)]
    return problems
