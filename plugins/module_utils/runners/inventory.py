# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Reading instances back: the runner behind ``proxy_info``.

Either lists every managed instance of one or all providers (``list_by_tag``, one call per
provider: what the controller polls with where a list is complete), or reads given ids
(``get``, concurrently). A provider or id that fails is reported in ``errors`` with its class
and does not hide the others: an unreachable backend must never look like an empty one.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import UsageError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import batch


def _error(provider: str, provider_id: str, exc: Exception) -> dict:
    return {"provider": provider, "id": provider_id, "error_class": errors.class_of(exc), "msg": str(exc)}


def run(pm) -> dict:
    ids = pm.params.get("ids")
    timeout = float(pm.params["timeout"])
    only = pm.selected_provider()
    if ids is not None and not only:
        raise UsageError("provider: required with ids (an id is only meaningful to its provider)")
    if ids is not None:
        return _get_ids(pm, pm.provider(only), ids, timeout)
    return _list(pm, pm.providers(only), timeout)


def _get_ids(pm, provider, ids, timeout) -> dict:
    def one(provider_id):
        try:
            return ("found", provider.get(provider_id, Deadline(timeout)).as_dict(provider.name))
        except errors.ProviderError as exc:
            if exc.error_class == errors.NOT_FOUND:
                return ("missing", provider_id)
            return ("error", _error(provider.name, provider_id, exc))

    outcomes = batch.run(
        ids, one, lambda i, exc: ("error", _error(provider.name, i, exc)), int(pm.params["concurrency"])
    )
    return {
        "changed": False,
        "instances": [value for kind, value in outcomes if kind == "found"],
        "not_found": [value for kind, value in outcomes if kind == "missing"],
        "errors": [value for kind, value in outcomes if kind == "error"],
    }


def unreadable_entries(name: str, provider) -> list:
    """``errors`` entries (``permanent``: reading again will not fix a corrupt record) for what
    the provider's last list left out unread."""
    return [
        {"provider": name, "id": provider_id, "error_class": errors.PERMANENT, "msg": msg}
        for provider_id, msg in getattr(provider, "list_problems", list)()  # fakes may lack it
    ]


def _list(pm, providers: dict, timeout) -> dict:
    unreadable = []

    def one(name):
        listed = [i.as_dict(name) for i in providers[name].list_by_tag(Deadline(timeout))]
        unreadable.extend(unreadable_entries(name, providers[name]))
        return listed

    names = sorted(providers)
    outcomes = batch.run(
        names,
        lambda n: ("ok", one(n)),
        lambda n, exc: ("error", _error(n, "", exc)),
        int(pm.params["concurrency"]),
    )
    instances, failures = [], []
    for kind, value in outcomes:
        if kind == "ok":
            instances.extend(value)
        else:
            failures.append(value)
            pm.module.warn("listing provider %s failed: %s" % (value["provider"], value["msg"]))
    for entry in unreadable:
        pm.module.warn("provider %s: %s" % (entry["provider"], entry["msg"]))
    failures.extend(unreadable)
    return {
        "changed": False,
        "instances": instances,
        "not_found": [],
        "errors": failures,
        "providers": names,
    }
