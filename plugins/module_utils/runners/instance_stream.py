# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""``instance_stream``: batch items that reach ``proxy_instance`` while its run works.

Why: a burst of Proxies reaches the controller over seconds, and a run that could take only the
items it was started with left the later ones waiting for another run (another ansible start-up,
module process and set of provider clients). With ``instance_stream`` the controller hands the
run a pipe and writes each further item to it as it comes; the run starts each one as soon as
its line is read and ends once the writer closed the pipe and every item finished.

One line is one item, always: every newline-terminated line, and a last fragment without one
at end of file, so item k's index (``len(instances) + k``) never depends on what a line holds.
Each is checked exactly as a listed item is (core's argument spec conversions through the module
glue, then ``instance_items``' own checks, and an instance an earlier item of the run named is
refused), and the values the spec marks ``no_log`` are masked from the moment the line is read.
A line that is not a JSON object is a failed item whose text is never quoted: it may hold
cloud-init or a password.
"""

from __future__ import annotations

import json

from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import (
    INSTANCE_OPTIONS,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import result_stream
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.instance_items import (
    InvalidItem,
    Taken,
    defaults,
    one_item,
)

FIELD = "instance_stream"
# One item's line at most (cloud-init included); a longer one is a failed item, skipped to its
# newline, so a writer that never ends a line cannot fill the module's memory.
MAX_LINE_BYTES = 4 * 1024 * 1024


def refusal(params: dict) -> str:
    """Why the task's options refuse ``instance_stream`` (empty: they do not, or it is unset)."""
    path = params.get(FIELD)
    if path is None:
        return ""
    if params.get("instances") is None:
        return "%s: only with instances (the batch form)" % FIELD
    if params.get("invalid_items") != "fail_item":
        return (
            "%s: only with invalid_items: fail_item (an item read after work began cannot be held "
            "back with the others, so fail_all's promise to change nothing could not hold)" % FIELD
        )
    return result_stream.pipe_problem(FIELD, path)


def lines(handle, limit: int = MAX_LINE_BYTES):
    """Each line of the binary file ``handle`` as it arrives, without its newline, until end of
    file (a last fragment without newline is a line too); ``None`` for a line longer than
    ``limit`` bytes, which is skipped up to its newline unread."""
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1]
        elif len(line) <= limit:
            yield line  # end of file came before a newline
        else:
            while not _skipped_to_newline(handle):
                pass
            yield None


def _skipped_to_newline(handle) -> bool:
    """Read on in a line too long to keep; True once its newline (or end of file) was read."""
    chunk = handle.readline(65536)
    return not chunk or chunk.endswith(b"\n")


def object_of(line: bytes | None):
    """The JSON object ``line`` holds, or None (not UTF-8, not JSON, not an object, too long)."""
    if line is None:
        return None
    try:
        given = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return given if isinstance(given, dict) else None


class InstanceStream:
    """The items streamed to a run, as ``batch.run``'s ``more``: iterating reads the pipe (it
    blocks while no line is there) and yields each line's item, checked, numbered after the
    run's ``items``; each is appended to ``items`` before it is yielded, so the run's list of
    items always holds every item whose work may have begun."""

    def __init__(self, pm, items: list):
        self.pm, self.items = pm, items
        self.first = len(items)
        self.stopped = ""  # why reading ended before end of file (a read error): warned about
        self._tops = defaults(pm.params, pm.raw_params)
        self._taken = Taken(items)

    def __iter__(self):
        count = 0
        try:
            with open(self.pm.params[FIELD], "rb") as handle:
                for k, line in enumerate(lines(handle)):
                    item = self._item(k, line)
                    self.items.append(item)
                    count += 1
                    yield item
        except OSError as exc:
            self.stopped = "%s: reading stopped after %d streamed items: %s" % (FIELD, count, exc.strerror)

    def _item(self, k: int, line: bytes | None):
        index, where = self.first + k, "%s[%d]" % (FIELD, k)
        given = object_of(line)
        if given is None:
            why = "not a JSON object" if line is not None else "longer than %d bytes" % MAX_LINE_BYTES
            return InvalidItem(index, where, {}, "%s: %s" % (where, why))
        values, problems = self.pm.checked_options(INSTANCE_OPTIONS, given, where)
        return one_item(
            index,
            where,
            (values, given),
            self._tops,
            self.pm.config,
            self.pm.provider,
            self._taken,
            problems,
        )
