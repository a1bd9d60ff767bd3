# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Run many independent items concurrently in one module process.

This is what makes the modules' batch form cheap: one process, one parsed config, one set of
provider clients and connections, and a bounded pool of threads, instead of one ansible task
(and one Python start-up) per instance. Results come back in input order; an item that raises
is turned into a result by ``on_error`` so one bad item never sinks the others. ``on_done``
hears of each result as soon as its item finishes (``result_stream``), in finishing order.
``more`` takes further items while the batch works (``instance_stream``): each is started as soon
as the iterator yields it, numbered after the items before it.
"""

from __future__ import annotations

import concurrent.futures

DEFAULT_CONCURRENCY = 16


def run(items, work, on_error, concurrency: int = DEFAULT_CONCURRENCY, on_done=None, more=None) -> list:
    """``[work(item) or on_error(item, exc)]`` for every item, in order, ``concurrency`` at a time;
    ``on_done(index, result)`` is called as each item finishes (None: not at all).

    ``more``: an iterator of further items that may block while it waits for the next one; each
    item it yields is started at once (the items before it go on meanwhile), and the results of
    ``items`` then of ``more``'s come back once it is exhausted and every item finished."""
    items = list(items)
    if more is None:
        if not items:
            return []
        if len(items) == 1 or concurrency <= 1:
            return [_one(i, item, work, on_error, on_done) for i, item in enumerate(items)]
    # With ``more``, how many items will come is not known: the pool is sized by ``concurrency``.
    workers = max(1, min(concurrency, len(items)) if more is None else concurrency)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="proxy") as pool:
        futures = [pool.submit(_one, i, item, work, on_error, on_done) for i, item in enumerate(items)]
        for item in () if more is None else more:  # this thread waits for each while the workers run
            futures.append(pool.submit(_one, len(futures), item, work, on_error, on_done))
        return [future.result() for future in futures]


def _one(index: int, item, work, on_error, on_done):
    try:
        result = work(item)
    except Exception as exc:  # turned into a per-item failure, never lost
        result = on_error(item, exc)
    if on_done is not None:
        on_done(index, result)
    return result
