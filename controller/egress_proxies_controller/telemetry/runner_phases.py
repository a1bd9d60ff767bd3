"""Where a runner run's time goes: start-up, module work and the rest, from its own events.

A run costs an ansible-playbook start-up whatever it carries; how much of a burst or of a steady
poll round is that start-up, and how much is the providers' work, decides whether to carry more
per run or to make calls cheaper. ansible-runner stamps every event (``created``, UTC): start-up
is from the run's start to the first task's module starting, module work is from there to the
last task's result, and the rest is ansible's and the runner's wind-down.
"""

from __future__ import annotations

import datetime

STARTED = "runner_on_start"
ENDED = ("runner_on_ok", "runner_on_failed", "runner_on_unreachable")


def _when(event: dict) -> float | None:
    created = event.get("created")
    if not created:
        return None
    try:
        stamp = datetime.datetime.fromisoformat(created)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=datetime.UTC)
    return stamp.timestamp()


def phases(events, started_at: float, elapsed: float) -> dict | None:
    """``{"startup", "module", "finish"}`` seconds of a run that began at ``started_at`` (wall
    clock) and took ``elapsed``; None when its events do not say (no task started)."""
    starts, ends = [], []
    for event in events:
        kind = event.get("event")
        if kind == STARTED or kind in ENDED:
            when = _when(event)
            if when is not None:
                (starts if kind == STARTED else ends).append(when)
    if not starts or not ends:
        return None
    first, last = min(starts), max(ends)
    startup = max(0.0, first - started_at)
    module = max(0.0, last - first)
    return {"startup": startup, "module": module, "finish": max(0.0, elapsed - startup - module)}
