"""A run that takes more calls while it works: the batcher's view of one run's ``ItemFeed``.

At most one per provider accepts at a time. It takes the provider's creates and deletes as they
come (no wait for the next run and its ansible start-up) until it holds ``batch_max`` of them,
until it has been open for the executor's feed window (a call fed last still has its call and
its follow before the run's timeout), or until it has gone quiet: nothing fed for
``QUIET_SECONDS`` while every item it has is answered (the run would only wait for more), or
nothing fed for the batcher's ``gather_while_busy`` in any case. Then it is closed, the module
reads end of file, and the run ends with its items. State here is guarded by the batcher's lock.
"""

from __future__ import annotations

import dataclasses

QUIET_SECONDS = 0.5  # nothing fed this long, every item answered: the feed closes


@dataclasses.dataclass
class OpenFeed:
    feed: object  # runs.item_feed.ItemFeed
    opened: float  # monotonic, when its run was started
    last: float  # monotonic, when it last took a call (or opened)
    keys: set  # the keys of the run's creates and deletes, listed and fed
    pending: set  # those whose answer has not come back yet

    def takes(self, key: str, batch_max: int) -> bool:
        """Whether a call of ``key`` may be fed to it now: open, with room, and not already a
        call of the key in this run (the module would refuse the second as a duplicate)."""
        return self.feed.open and len(self.keys) < batch_max and key not in self.keys

    def reserve(self, key: str, now: float) -> None:
        self.keys.add(key)
        self.pending.add(key)
        self.last = now

    def give_back(self, key: str) -> None:
        """A reserved call that was not fed after all (answered without a run, or let go)."""
        self.keys.discard(key)
        self.pending.discard(key)

    def closes_in(self, now: float, window: float, gather: float, batch_max: int) -> float:
        """Seconds until it should close (0 or less: now)."""
        if len(self.keys) >= batch_max or not self.feed.open:
            return 0.0
        quiet = QUIET_SECONDS if not self.pending else max(gather, QUIET_SECONDS)
        return min(self.opened + window, self.last + quiet) - now
