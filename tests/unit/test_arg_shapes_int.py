"""Every int option of every module refuses an infinity (and an exponent past 64 bits) naming its
path, before core's ``check_type_int`` crashes on it with ``OverflowError`` (issue 40 §6)."""

from __future__ import annotations

import decimal

import pytest
from ansible.module_utils.common.validation import check_type_int

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import param_checks
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue import arg_shapes
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import (
    INSTANCE_OPTIONS,
    POOL_OPTIONS,
    PROVIDERS_ARGS,
)

INFINITIES = ["inf", "Infinity", "-inf", "+Infinity", " inf ", float("inf"), float("-inf")]


@pytest.mark.parametrize("value", INFINITIES, ids=repr)
def test_core_crashes_on_an_infinity(value):
    """Why the check exists: core raises OverflowError, not its TypeError, for these."""
    with pytest.raises(OverflowError):
        check_type_int(value)


@pytest.mark.parametrize("value", INFINITIES, ids=repr)
@pytest.mark.parametrize(
    ("spec", "params", "path"),
    [
        (PROVIDERS_ARGS, {"concurrency": "V"}, "concurrency"),
        (INSTANCE_OPTIONS, {"port": "V"}, "port"),
        (
            {"instances": {"type": "list", "elements": "dict", "options": INSTANCE_OPTIONS}},
            {"instances": [{"port": 1}, {"port": "V"}]},
            "instances[1].port",
        ),
        (POOL_OPTIONS, {"count": "V"}, "count"),
        (POOL_OPTIONS, {"spread": [{"provider": "a", "weight": "V"}]}, "spread[0].weight"),
        (POOL_OPTIONS, {"spread": [{"provider": "a", "max": "V"}]}, "spread[0].max"),
        (
            {"uid_shards": {"type": "dict", "options": {"owned": {"type": "list", "elements": "int"}}}},
            {"uid_shards": {"owned": [0, "V"]}},
            "uid_shards.owned[1]",
        ),
    ],
)
def test_an_infinity_is_refused_naming_the_field(spec, params, path, value):
    params = _substitute(params, value)
    assert arg_shapes.problems(spec, params) == ["%s: must be a whole number, not infinity" % path]


def test_a_huge_exponent_is_refused_before_it_is_built():
    assert arg_shapes.problems(POOL_OPTIONS, {"count": "1e999999999"}) == [
        "count: must be a whole number of at most 19 digits"
    ]
    assert decimal.Decimal("1e999999999").adjusted() > param_checks.MAX_INT_DIGITS


@pytest.mark.parametrize(
    "value", [3128, "3128", "3128.0", 3128.0, "nan", "x", "", "1e3", True, [1]], ids=repr
)
def test_what_core_handles_itself_is_left_to_it(value):
    """A number, or what core refuses with its own TypeError, draws no problem here."""
    assert arg_shapes.problems(INSTANCE_OPTIONS, {"port": value}) == []


def _substitute(params, value):
    if params == "V":
        return value
    if isinstance(params, dict):
        return {k: _substitute(v, value) for k, v in params.items()}
    if isinstance(params, list):
        return [_substitute(v, value) for v in params]
    return params
