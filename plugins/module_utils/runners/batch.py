# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Run many independent items concurrently in one module process.

This is what makes the modules' batch form cheap: one process, one parsed config, one set of
provider clients and connections, and a bounded pool of threads, instead of one ansible task
(and one Python start-up) per instance. Results come back in input order; an item that raises
is turned into a result by ``on_error`` so one bad item never sinks the others.
"""

from __future__ import annotations

import concurrent.futures

DEFAULT_CONCURRENCY = 16


def run(items, work, on_error, concurrency: int = DEFAULT_CONCURRENCY) -> list:
    """``[work(item) or on_error(item, exc)]`` for every item, in order, ``concurrency`` at a time."""
    items = list(items)
    if not items:
        return []
    if len(items) == 1 or concurrency <= 1:
        return [_one(item, work, on_error) for item in items]
    workers = max(1, min(concurrency, len(items)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="proxy") as pool:
        futures = [pool.submit(_one, item, work, on_error) for item in items]
        return [future.result() for future in futures]


def _one(item, work, on_error):
    try:
        return work(item)
    except Exception as exc:  # turned into a per-item failure, never lost
        return on_error(item, exc)
