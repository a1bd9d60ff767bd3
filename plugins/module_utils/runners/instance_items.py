# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The items ``proxy_instance`` converges, each validated completely before the first call.

One bad item must change nothing (``invalid_items: fail_all``), so everything that can be known
without a backend is checked here: the raw types Ansible would silently convert, names, ports,
waits, ids (parsed by their own provider), and items that name one instance twice in a batch
(a duplicate double-counts ``changed``; ``present`` next to ``absent`` has no answer). An item
that arrives while the run works (``instance_stream``) gets the same checks as it arrives
(``one_item``), a repeat of any earlier item of the run included (``Taken``).
"""

from __future__ import annotations

import dataclasses

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import UsageError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.placement import (
    FIELDS as PLACEMENT_FIELDS,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import param_checks, proxy_auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import (
    INSTANCE_DEFAULTS,
    INSTANCE_OPTIONS,
    STATE_ABSENT,
    STATE_PRESENT,
)

TEXT_FIELDS = ("provider", "uid", "name", "id", "namespace", "proxy_name")


@dataclasses.dataclass(frozen=True)
class Item:
    index: int
    where: str  # "" for the single form, "instances[3]" in a batch: used in messages
    provider: str
    uid: str
    name: str
    id: str
    namespace: str
    proxy_name: str
    placement: contract.Placement
    cloud_init: str = dataclasses.field(repr=False)
    port: int
    state: str
    wait: bool
    wait_timeout: float
    force: bool = False
    owner_reference: bool = False
    auth: proxy_auth.Auth | None = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass(frozen=True)
class InvalidItem:
    """A batch item that failed validation, kept (with ``invalid_items=fail_item``) to report it.

    ``repeated``: the item it would have been, when its only fault is naming an instance another
    item names too (a streamed item naming that instance again repeats it as well)."""

    index: int
    where: str
    values: dict
    message: str
    repeated: Item | None = dataclasses.field(default=None, repr=False)


def items_from_params(params: dict, config, isolate: bool = False, raw=None, resolve=None) -> list:
    """Merge top-level defaults into each item and validate all of them.

    ``raw`` holds the parameters as the task gave them, before Ansible's conversions;
    ``resolve(provider_name)`` returns the provider that parses the item's id. By default any
    invalid item raises ``UsageError`` before anything is touched. With ``isolate`` (the
    controller's mode, where items are independent Proxies) an invalid item becomes an
    ``InvalidItem`` in its place and the others proceed.
    """
    raw = raw if raw is not None else params
    raw_items = params.get("instances")
    top, raw_top = defaults(params, raw)
    if raw_items is None:
        entries = [(0, "", top, raw_top)]
    else:
        if not raw_items:
            raise UsageError("instances: must hold at least one item")
        given = raw.get("instances")
        given = given if isinstance(given, list) and len(given) == len(raw_items) else raw_items
        entries = [
            (i, "instances[%d]" % i, _merge(top, item), _merge(raw_top, _as_dict(given[i])))
            for i, item in enumerate(raw_items)
        ]
    problems_of = {}
    items = []
    for index, where, values, raw_values in entries:
        problems = []
        items.append(_checked(index, where, values, raw_values, config, resolve, problems))
        problems_of[index] = problems
    for index, problem in _duplicates([i for i in items if isinstance(i, Item)]).items():
        problems_of[index].append(problem)
        items[index] = _invalid_from(items[index], problem)
    all_problems = [p for index in sorted(problems_of) for p in problems_of[index]]
    if not all_problems and not isolate and resolve is not None:
        all_problems = _room(items, resolve)
    if all_problems and not isolate:
        raise UsageError("; ".join(all_problems))
    return items


def defaults(params: dict, raw: dict) -> tuple:
    """The top-level per-instance values every batch item inherits: (as converted, as given)."""
    return {k: params.get(k) for k in INSTANCE_OPTIONS}, {k: raw.get(k) for k in INSTANCE_OPTIONS}


def one_item(index: int, where: str, given: tuple, tops: tuple, config, resolve, taken: Taken, problems=()):
    """One batch item that arrives after the run began (``instance_stream``): ``given`` its
    fields (as core's argument spec converted them, as written), ``tops`` the ``defaults``,
    ``problems`` what core's argument spec found. Checked exactly as a listed item is, and
    refused when it names an instance an earlier item of the run (``taken``) names; an ``Item``,
    or an ``InvalidItem`` saying why."""
    values, raw_values = _merge(tops[0], given[0]), _merge(tops[1], given[1])
    if problems:  # core's conversions failed: as for a listed item, nothing else is checked
        return InvalidItem(index, where, values, "; ".join(problems))
    item = _checked(index, where, values, raw_values, config, resolve, [])
    if isinstance(item, InvalidItem):
        return item
    repeat = taken.repeat(item)
    if repeat:
        return _invalid_from(item, repeat)
    taken.add(item)
    return item


class Taken:
    """The instances the items of a run named so far (provider and name, provider and id), so an
    item that comes later and names one of them again is refused, as two listed items are."""

    def __init__(self, items: list):
        self._first = {}  # key -> the first item naming it
        for item in items:
            self.add(item.repeated if isinstance(item, InvalidItem) else item)

    def add(self, item) -> None:
        if isinstance(item, Item):
            for key in instance_keys(item):
                self._first.setdefault(key, item)

    def repeat(self, item: Item) -> str:
        """Why ``item`` repeats an earlier item, or ``""``."""
        for key in sorted(instance_keys(item)):
            earlier = self._first.get(key)
            if earlier is not None:
                why = "contradicts" if earlier.state != item.state else "repeats"
                return _repeat_message(item.where, why, "an earlier", key, earlier.where)
        return ""


def instance_keys(item: Item) -> set:
    """What names ``item``'s instance: provider and name, provider and id (a delete by id alone
    has no name)."""
    keys = {("name", item.provider, item.name)} if item.name else set()
    if item.id:
        keys.add(("id", item.provider, item.id))
    return keys


def _repeat_message(where: str, why: str, other: str, key: tuple, wheres: str) -> str:
    kind, provider, value = key
    return "%s: %s %s item for the same instance (provider %s, %s %s: %s); give each instance once" % (
        where,
        why,
        other,
        provider,
        kind,
        excerpt(value),
        wheres,
    )


def _room(items: list, resolve) -> list:
    """More present items on one backend than it can ever hold (each is its own instance: the
    local provider gives each an address of its range) are refused before anything is created:
    thousands of creates failing alike, each with its own result, help no one (issue 28 §7).
    Providers on one backend (two local providers on one stateDir) share its room. Not in the
    controller's isolated mode, whose items are independent Proxies that each fail alone."""
    wanted = {}
    for item in items:
        if item.state != STATE_PRESENT:
            continue
        provider = resolve(item.provider)
        room = provider.capacity()
        if room is None:
            continue
        entry = wanted.setdefault(provider.backend_key(), [room, set(), 0])
        entry[1].add(item.provider)
        entry[2] += 1
    return [
        "instances: %d items with state=present on provider %s, more than it can ever hold (%d: %s)"
        % (count, ", ".join(sorted(providers)), room[0], room[1])
        for room, providers, count in wanted.values()
        if count > room[0]
    ]


def _as_dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def _invalid_from(item: Item, problem: str) -> InvalidItem:
    values = {"provider": item.provider, "uid": item.uid, "name": item.name, "id": item.id}
    return InvalidItem(item.index, item.where, values, problem, repeated=item)


def _duplicates(items: list) -> dict:
    """``{index: problem}`` for every item that names the same instance as another one."""
    groups = {}
    for item in items:
        for key in instance_keys(item):
            groups.setdefault(key, []).append(item)
    out = {}
    for key, group in sorted(groups.items()):
        if len(group) < 2:
            continue
        wheres = ", ".join(i.where for i in group)
        states = sorted({i.state for i in group})
        why = "contradicts" if len(states) > 1 else "repeats"
        for item in group:
            out.setdefault(item.index, _repeat_message(item.where, why, "another", key, wheres))
    return out


def _merge(top: dict, item: dict) -> dict:
    merged = dict(top)
    for key, value in item.items():
        if value is not None:
            merged[key] = value
    return merged


def _field(where: str, name: str) -> str:
    return "%s.%s" % (where, name) if where else name


def raw_problems(where: str, raw: dict) -> list:
    """What Ansible would silently convert: a dict or list for a string, ``true`` for a port."""
    problems = [param_checks.text(raw.get(key), _field(where, key)) for key in TEXT_FIELDS]
    cloud_init = raw.get("cloud_init")
    if cloud_init is not None and not isinstance(cloud_init, str):
        problems.append("%s: must be a string, not %s" % (_field(where, "cloud_init"), excerpt(cloud_init)))
    if raw.get("port") is not None:
        problems.append(param_checks.port(raw["port"], _field(where, "port")))
    if raw.get("wait_timeout") is not None:
        problems.append(param_checks.seconds(raw["wait_timeout"], _field(where, "wait_timeout")))
    problems.extend(proxy_auth.problems(raw.get("auth"), _field(where, "auth")))
    return [p for p in problems if p]


def _checked(index, where, values, raw, config, resolve, problems):
    """``_item``, or an ``InvalidItem`` holding its ``problems``."""
    item = _item(index, where, values, raw, config, resolve, problems)
    return item if item is not None else InvalidItem(index, where, values, "; ".join(problems))


def _item(index, where, values, raw, config, resolve, problems):
    values = dict(values)
    for key, default in INSTANCE_DEFAULTS.items():
        if values.get(key) is None:
            values[key] = default
    problems.extend(raw_problems(where, raw))
    if problems:
        return None
    provider = values.get("provider")
    if not provider:
        problems.append("%s: required" % _field(where, "provider"))
    elif provider not in config.names():
        problems.append("%s: %s" % (_field(where, "provider"), config.not_configured(provider)))
    uid, name, ident = values.get("uid") or "", values.get("name") or "", values.get("id") or ""
    if values["state"] == STATE_PRESENT and not uid:
        problems.append(
            "%s: required when state=present (it is the instance's ownership mark)" % _field(where, "uid")
        )
    if values["state"] == STATE_ABSENT and not (uid or name or ident):
        problems.append("%s: one of id, name or uid is required when state=absent" % (where or "parameters"))
    if name and not names.is_dns_label(name):
        problems.append("%s: %s is not a DNS label" % (_field(where, "name"), excerpt(name)))
    port_problem = param_checks.port(values["port"], _field(where, "port"))
    if port_problem:
        problems.append(port_problem)
    wait_problem = param_checks.seconds(values["wait_timeout"], _field(where, "wait_timeout"))
    if wait_problem:
        problems.append(wait_problem)
    if ident and resolve is not None and not problems:
        problems.extend(_id_problems(where, ident, resolve(provider)))
    if problems:
        return None
    placement = values.get("placement") or {}
    item = Item(
        index=index,
        where=where,
        provider=provider,
        uid=uid,
        name=name or (names.name_from_uid(uid) if uid else ""),
        id=ident,
        namespace=values.get("namespace") or "",
        proxy_name=values.get("proxy_name") or "",
        placement=contract.Placement(**{field: placement.get(field) or "" for field in PLACEMENT_FIELDS}),
        cloud_init=values.get("cloud_init") or "",
        port=int(values["port"]),
        state=values["state"],
        wait=bool(values["wait"]),
        wait_timeout=float(values["wait_timeout"]),
        force=bool(values["force"]),
        owner_reference=bool(values["owner_reference"]),
        auth=proxy_auth.from_value(values.get("auth")),
    )
    wants_auth = item.auth is not None and item.state == STATE_PRESENT and resolve is not None
    if wants_auth and not resolve(provider).supports_auth:
        problems.append(
            "%s: provider %s (type %s) cannot render proxy authentication; see docs/auth.md"
            % (_field(where, "auth"), provider, resolve(provider).type_name)
        )
        return None
    if item.state == STATE_PRESENT and resolve is not None:
        refusal = resolve(provider).check_request(request_of(item))
        if refusal:
            problems.append("%s: %s" % (where, refusal) if where else refusal)
            return None
    return item


def request_of(item: Item) -> contract.CreateRequest:
    """What ``create`` gets for ``item``."""
    return contract.CreateRequest(
        name=item.name,
        uid=item.uid,
        namespace=item.namespace,
        proxy_name=item.proxy_name,
        placement=item.placement,
        cloud_init=item.cloud_init,
        port=item.port,
        owner_reference=item.owner_reference,
        auth=item.auth,
    )


def _id_problems(where: str, ident: str, provider) -> list:
    """The id parsed by its own provider, without a backend call."""
    try:
        provider.name_in_id(ident)
    except ValueError as exc:
        return ["%s: %s" % (_field(where, "id"), exc)]
    return []
