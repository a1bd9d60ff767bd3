"""The Compute Engine list ``filter`` language, as far as the provider and its tests use it.

Two syntaxes, never mixed in one filter (the API refuses that too):

- comparison: ``field = literal``, ``field != literal`` and ``field:*`` (has), one expression or
  several parenthesized ones joined by whitespace or ``AND``;
- regular expression: ``field eq regex`` / ``field ne regex`` (RE2 over the whole field), one
  unparenthesized expression or several parenthesized ones.

Fields are dotted paths into the resource (``labels.proxy-operator-managed``, ``status``).
A filter the fake cannot parse raises ``FilterError``, which the server answers with a 400.
"""

from __future__ import annotations

import re

_EXPR = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(!=|=|:|\beq\b|\bne\b)\s*(.*?)\s*$")


class FilterError(ValueError):
    pass


def _literal(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _resolve(resource: dict, path: str):
    current = resource
    for part in path.split("."):
        if not isinstance(current, dict) or part not in current:
            return None
        current = current[part]
    return current


def _as_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _split(text: str) -> list:
    text = text.strip()
    if not text.startswith("("):
        return [text]
    groups, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "(":
            if depth == 0:
                start = index + 1
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise FilterError("unbalanced parentheses in filter %r" % text)
            if depth == 0:
                groups.append(text[start:index])
    if depth != 0:
        raise FilterError("unbalanced parentheses in filter %r" % text)
    between = re.sub(r"\([^()]*\)", " ", text)
    for word in between.split():
        if word.upper() == "OR":
            raise FilterError("OR is not supported by this fake")
        if word.upper() != "AND":
            raise FilterError("unexpected %r between expressions in filter %r" % (word, text))
    return groups


def compile_filter(text: str):
    """A predicate over resource dicts."""
    if not text or not text.strip():
        return lambda resource: True
    tests, kinds = [], set()
    for expr in _split(text):
        match = _EXPR.match(expr)
        if not match:
            raise FilterError("invalid filter expression %r" % expr)
        field, op, raw = match.groups()
        literal = _literal(raw)
        kinds.add("regex" if op in ("eq", "ne") else "compare")
        if op in ("eq", "ne"):
            try:
                pattern = re.compile(literal)
            except re.error as exc:
                raise FilterError("invalid regular expression %r: %s" % (literal, exc)) from None
            want = op == "eq"
            tests.append(
                lambda r, f=field, p=pattern, w=want: bool(p.fullmatch(_as_text(_resolve(r, f)))) == w
            )
        elif op == ":":
            if literal != "*":
                raise FilterError("only field:* is supported by this fake")
            tests.append(lambda r, f=field: _resolve(r, f) is not None)
        else:
            want = op == "="
            tests.append(lambda r, f=field, v=literal, w=want: (_as_text(_resolve(r, f)) == v) == w)
    if len(kinds) > 1:
        raise FilterError("cannot combine eq/ne regular expressions with =/!= comparisons")
    return lambda resource: all(test(resource) for test in tests)
