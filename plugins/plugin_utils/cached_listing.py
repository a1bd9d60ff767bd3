# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Whether an inventory cache entry is this plugin's listing, before anything reads it.

The cache is a file or a key-value store any other writer may have touched (another plugin
sharing ``cache_connection``, an older release, a hand edit). An entry of another shape used to
give an empty inventory with exit status 0, as if the providers held nothing; the plugin now
treats it as a miss and lists afresh. The problem names the first wrong field, never its value.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.plugin_utils.proxy_hosts import FIELDS

ERROR_FIELDS = ("provider", "error_class", "msg")


def _record_problem(record, where: str) -> str:
    if not isinstance(record, dict):
        return "%s: not a mapping" % where
    for field in FIELDS:
        value = record.get(field)
        if field == "port":
            if not isinstance(value, int) or isinstance(value, bool):
                return "%s.port: not an integer" % where
        elif not isinstance(value, str):
            return "%s.%s: %s" % (where, field, "missing" if field not in record else "not a string")
    return ""


def _error_problem(error, where: str) -> str:
    if not isinstance(error, dict):
        return "%s: not a mapping" % where
    for field in ERROR_FIELDS:
        if not isinstance(error.get(field), str):
            return "%s.%s: %s" % (where, field, "missing" if field not in error else "not a string")
    return ""


def problem(listing) -> str:
    """The first way ``listing`` differs from what ``_list`` stores, or ``""``."""
    if not isinstance(listing, dict):
        return "not a mapping"
    for key in ("hosts", "errors", "warnings"):
        if not isinstance(listing.get(key), list):
            return "%s: %s" % (key, "missing" if key not in listing else "not a list")
    for index, record in enumerate(listing["hosts"]):
        found = _record_problem(record, "hosts[%d]" % index)
        if found:
            return found
    for index, error in enumerate(listing["errors"]):
        found = _error_problem(error, "errors[%d]" % index)
        if found:
            return found
    for index, warning in enumerate(listing["warnings"]):
        if not isinstance(warning, str):
            return "warnings[%d]: not a string" % index
    return ""
