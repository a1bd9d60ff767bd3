# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Values core Ansible would refuse without a field path, or crash on, named by their path.

Core Ansible refuses ``spread: [la]`` with "dictionary requested, could not parse JSON or
key=value" and no field path (issue 28 §7), before any module code runs; this runs first and
names the element (``spread[0]``) instead. Only what Ansible itself would refuse is reported (a
``key=value`` string it converts stays its business), and the message names the element's type,
never its value: an element of a batch may hold a password.

An ``int`` option (``port``, ``count``, ``concurrency``, ``spread[].weight``, ``proxy_gc``'s
``owned[]``...) given ``"inf"`` or ``.inf`` makes core's ``check_type_int`` raise
``OverflowError`` (``int(Decimal("inf"))``): a traceback, no field, no ``error_class`` (issue 40
§6); ``"1e999999999"`` would build a billion-digit integer first. Both are refused here, naming the
option, before core converts anything; what core refuses cleanly itself stays its business.

``checked`` applies core's own argument spec to a mapping Ansible never saw (a batch item read
from ``instance_stream`` while the run works), so such an item is converted and refused exactly
as a listed item's suboptions are, and its ``no_log`` values are known to the module at once.
"""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.common.parameters import remove_values
from ansible.module_utils.common.validation import check_type_dict

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import label
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.param_checks import int_problem

MAX_MESSAGE_CHARS = 400  # one problem of ``checked``: core's longest (a bool's) is about 250


def _is_mapping(value) -> bool:
    try:
        check_type_dict(value)
    except TypeError:
        return False
    return True


def problems(argument_spec: dict, params: dict, where: str = "") -> list:
    """``<option>[<i>]: must be a mapping`` for each such element, and an int option's value
    core cannot convert without crashing, nested options included."""
    out = []
    for name, spec in argument_spec.items():
        value = (params or {}).get(name)
        if value is None:
            continue
        path = where + name
        options = spec.get("options") or {}
        if spec.get("type") == "int":
            out.append(int_problem(value, path))
        elif spec.get("type") == "list" and spec.get("elements") == "int" and isinstance(value, list):
            out.extend(int_problem(element, "%s[%d]" % (path, index)) for index, element in enumerate(value))
        elif spec.get("type") == "list" and spec.get("elements") == "dict" and isinstance(value, list):
            for index, element in enumerate(value):
                if not _is_mapping(element):
                    out.append(
                        "%s[%d]: must be a mapping (with %s), not a %s"
                        % (path, index, ", ".join(sorted(options)) or "keys", type(element).__name__)
                    )
                elif isinstance(element, dict) and options:
                    out.extend(problems(options, element, "%s[%d]." % (path, index)))
        elif spec.get("type") == "dict" and isinstance(value, dict) and options:
            out.extend(problems(options, value, path + "."))
    return [problem for problem in out if problem]


def checked(argument_spec: dict, given: dict, where: str) -> tuple:
    """``given`` (options of ``argument_spec`` that Ansible never parsed: a streamed batch item)
    converted and checked by core's ``ArgumentSpecValidator`` as core checks a list item's
    suboptions, one option at a time so each problem names its option (``<where>.<option>:``;
    the options constrain each other in no way, so this is the whole check). An option given
    ``None`` is not given. Returns (the converted values of the options that passed, the problems
    with the ``no_log`` values masked, every value the spec marks ``no_log``, an invalid
    option's too). ``problems`` above runs first: core's int conversion crashes on an infinity."""
    values, secrets = {}, set()
    supported = ", ".join(sorted(argument_spec))
    found = [
        "%s.%s: unsupported parameter (supported: %s)" % (where, label(name), supported)
        for name in sorted(given, key=str)
        if name not in argument_spec
    ]
    for name, spec in argument_spec.items():
        if given.get(name) is None:
            continue
        crash = problems({name: spec}, {name: given[name]}, where + ".")
        if crash:
            found.extend(crash)
            continue
        result = ArgumentSpecValidator({name: spec}).validate({name: given[name]})
        # What AnsibleModule adds to its no_log_values from its own validation (ansible-core 2.16+).
        secrets.update(value for value in result._no_log_values if value)
        if result.error_messages:
            found.append("%s.%s: %s" % (where, name, "; ".join(result.error_messages)))
        else:
            values[name] = result.validated_parameters[name]
    return values, [_one_line(remove_values(problem, secrets)) for problem in found], secrets


def _one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A problem as one bounded line: what core quotes of a value (``got: ...``) has its control
    characters escaped, so a newline cannot forge a log line, and a long value is cut."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[: limit + 1])
    return shown if len(text) <= limit else "%s...(%d chars)" % (shown[:limit], len(text))
