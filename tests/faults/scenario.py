"""A scenario: a named fault, the matrix columns it applies to, and how to inject it."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    columns: tuple
    #: ``inject(target)`` -> a context manager: the fault is on inside it, healed at exit; its
    #: value is the number of faults injected
    inject: Callable
    #: the flow: "round" (faults.provider_round.run) or a callable ``(target, scenario) -> Outcome``
    flow: object = "round"

    def id(self, column: str) -> str:
        return "%s-%s" % (self.name, column)


@contextlib.contextmanager
def no_fault(target):
    """The inject of a scenario whose flow makes its own fault (a kill, a broken file)."""
    yield 1
