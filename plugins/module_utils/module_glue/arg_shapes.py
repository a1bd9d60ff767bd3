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
"""

from __future__ import annotations

from ansible.module_utils.common.validation import check_type_dict

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.param_checks import int_problem


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
