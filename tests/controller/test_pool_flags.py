"""Every ``--pool-*`` flag is a keyword of the pool loop (``__main__`` passes the group whole), and
``--pool-auth-recheck`` sets how often a pool asks whether its auth Secret changed."""

from __future__ import annotations

import inspect

from egress_proxies_controller.__main__ import _prefixed, parser
from egress_proxies_controller.pool.controller import PoolController


def pool_flags() -> list:
    return [a.dest for a in parser()._actions if a.dest.startswith("pool_")]


def test_every_pool_flag_is_a_keyword_of_the_pool_loop():
    keywords = inspect.signature(PoolController).parameters
    assert sorted(pool_flags()) == sorted(
        ["pool_interval", "pool_resync", "pool_auth_recheck", "pool_target_retry"]
    )
    for dest in pool_flags():
        assert dest[len("pool_") :] in keywords, dest


def test_the_auth_recheck_flag_reaches_the_loop_and_defaults_to_five_seconds():
    assert parser().parse_args([]).pool_auth_recheck == 5.0
    keywords = _prefixed(parser().parse_args(["--pool-auth-recheck", "12"]), "pool_")
    assert keywords["auth_recheck"] == 12.0
    inspect.signature(PoolController).bind(*[None] * 4, None, **keywords)  # accepted as they are
