# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The options of ``proxy_pool``, validated completely before the first provider call.

Bad input changes nothing, so everything knowable without a backend is checked here and every
problem names its field: the pool name, ``count``, each spread target (its provider must be
configured; names and provider-plus-placement pairs must not repeat; weights and maxima are
whole numbers, and the spread must be able to hold ``count``), and the instance template, which
is checked by ``proxy_instance``'s own item validation once per target (so a port, auth or
placement a provider refuses is refused here too, before anything is touched).
"""

from __future__ import annotations

import dataclasses

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import UsageError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import param_checks
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import (
    STATE_PRESENT,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pool_members
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.instance_items import (
    Item,
    items_from_params,
    raw_problems,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.pool_target import (
    DEFAULT_TARGET,
    Target,
)

TEMPLATE_FIELDS = ("placement", "cloud_init", "port", "auth", "namespace", "wait", "wait_timeout")


@dataclasses.dataclass(frozen=True)
class PoolSpec:
    pool: str
    count: int
    state: str
    targets: tuple
    templates: dict = dataclasses.field(repr=False)  # target name -> Item every member copies


def spec_from_params(params: dict, raw: dict, config, resolve) -> PoolSpec:
    """The validated pool, or ``UsageError`` with every problem found."""
    problems = []
    pool = _pool_name(raw.get("pool"), problems)
    state = params.get("state") or STATE_PRESENT
    count = _count(raw.get("count"), state, problems)
    targets = _targets(params, raw, config, problems)
    if not problems and state == STATE_PRESENT:
        problems.extend(_capacity(count, targets))
    if not problems and state == STATE_PRESENT:
        problems.extend(_room(count, targets, resolve))
    problems.extend(raw_problems("", {k: raw.get(k) for k in TEMPLATE_FIELDS}))
    if problems:
        raise UsageError("; ".join(problems))
    templates = {}
    for index, target in enumerate(targets):
        templates[target.name] = _template(params, raw, pool, state, index, target, config, resolve, problems)
    if problems:
        raise UsageError("; ".join(problems))
    return PoolSpec(pool, count, state, tuple(targets), templates)


def _pool_name(value, problems: list) -> str:
    problem = param_checks.text(value, "pool")
    if not problem and not value:
        problem = "pool: required"
    if not problem and (not names.is_dns_label(value) or len(value) > pool_members.MAX_POOL_CHARS):
        problem = "pool: %s is not a DNS label of at most %d characters" % (
            excerpt(value),
            pool_members.MAX_POOL_CHARS,
        )
    if problem:
        problems.append(problem)
        return ""
    return value


def _count(value, state: str, problems: list) -> int:
    if value is None:
        if state == STATE_PRESENT:
            problems.append("count: required when state=present (the number of members the pool keeps)")
        return 0
    problem = param_checks.whole(value, "count", 0, pool_members.MAX_COUNT)
    if problem:
        problems.append(problem)
        return 0
    return int(value)


def _targets(params: dict, raw: dict, config, problems: list) -> list:
    spread, provider = raw.get("spread"), raw.get("provider")
    if spread is not None and provider is not None:
        problems.append("provider: give either provider (one target) or spread, not both")
        return []
    if spread is None:
        problem = param_checks.text(provider, "provider") or (
            "" if provider else "provider: or spread: required"
        )
        if not problem and provider not in config.names():
            problem = "provider: %s" % config.not_configured(provider)
        if problem:
            problems.append(problem)
            return []
        return [Target(DEFAULT_TARGET, provider, {})]
    if not isinstance(spread, list) or not spread:
        problems.append("spread: must be a list of at least one target")
        return []
    converted = params.get("spread") or []
    targets = []
    for index, entry in enumerate(spread):
        target = _target(index, entry, converted[index] if index < len(converted) else {}, config, problems)
        if target is not None:
            targets.append((index, target))
    problems.extend(_repeats(targets))
    return [target for _index, target in targets]


def _target(index: int, raw: dict, converted: dict, config, problems: list):
    where = "spread[%d]" % index
    if not isinstance(raw, dict):
        problems.append("%s: must be a mapping, not %s" % (where, excerpt(raw)))
        return None
    found = []
    provider = raw.get("provider")
    problem = param_checks.text(provider, where + ".provider") or (
        "" if provider else where + ".provider: required"
    )
    if not problem and provider not in config.names():
        problem = "%s.provider: %s" % (where, config.not_configured(provider))
    found.append(problem)
    name = raw.get("name") if raw.get("name") is not None else provider
    name_problem = param_checks.text(name, where + ".name")
    if (
        not name_problem
        and name
        and (not names.is_dns_label(name) or len(name) > pool_members.MAX_TARGET_CHARS)
    ):
        name_problem = (
            "%s.name: %s is not a DNS label of at most %d characters (the name defaults to the provider)"
            % (
                where,
                excerpt(name),
                pool_members.MAX_TARGET_CHARS,
            )
        )
    found.append(name_problem)
    weight = raw.get("weight", 1) if raw.get("weight") is not None else 1
    found.append(param_checks.whole(weight, where + ".weight", 0, pool_members.MAX_COUNT))
    maximum = raw.get("max")
    if maximum is not None:
        found.append(param_checks.whole(maximum, where + ".max", 0, pool_members.MAX_COUNT))
    found = [p for p in found if p]
    if found:
        problems.extend(found)
        return None
    placement = {k: v for k, v in (converted.get("placement") or {}).items() if v is not None}
    return Target(name, provider, placement, int(weight), None if maximum is None else int(maximum))


def _repeats(targets: list) -> list:
    problems, by_name, by_place = [], {}, {}
    for index, target in targets:
        place = (target.provider, tuple(sorted(target.placement.items())))
        if target.name in by_name:
            problems.append(
                "spread[%d].name: %s repeats spread[%d] (give two targets of one provider distinct names)"
                % (index, excerpt(target.name), by_name[target.name])
            )
        elif place in by_place:
            problems.append(
                "spread[%d]: same provider and placement as spread[%d]; merge them (add the weights)"
                % (index, by_place[place])
            )
        by_name.setdefault(target.name, index)
        by_place.setdefault(place, index)
    return problems


def _room(count: int, targets: list, resolve) -> list:
    """A count more than the providers can ever hold (each backend once: two providers on one
    stateDir share its addresses) is refused before anything is created: thousands of creates
    failing alike help no one (issue 28 §7)."""
    rooms = {}
    for target in targets:
        if target.weight <= 0:
            continue
        provider = resolve(target.provider)
        room = provider.capacity()
        if room is None:
            return []  # one target without a known bound can take the rest
        rooms.setdefault(provider.backend_key(), (target.provider, room))
    total = sum(room[0] for _name, room in rooms.values())
    if count <= total:
        return []
    return [
        "count: %d is more than the spread's providers can ever hold (%d: %s)"
        % (count, total, "; ".join("%s: %s" % (name, room[1]) for name, room in rooms.values()))
    ]


def _capacity(count: int, targets: list) -> list:
    if count == 0:
        return []
    weighted = [t for t in targets if t.weight > 0]
    if not weighted:
        return ["spread: every weight is 0, so no target can hold the count of %d" % count]
    if all(t.maximum is not None for t in weighted):
        room = sum(t.maximum for t in weighted)
        if room < count:
            return [
                "count: %d is more than the spread can hold (the maxima of its weighted targets add up to %d)"
                % (count, room)
            ]
    return []


def _template(params, raw, pool, state, index, target, config, resolve, problems):
    """The member ``Item`` of ``target``: the template with the target's provider and placement
    over the template's, validated as ``proxy_instance`` validates an instance."""
    placement = {k: v for k, v in (params.get("placement") or {}).items() if v is not None}
    placement.update(target.placement)
    uid = pool_members.member_uid(pool, target.name, 0)
    common = {
        "provider": target.provider,
        "uid": uid,
        "name": pool_members.member_name(pool, 0),
        "state": state,
        "placement": placement,
    }
    item_params = dict({k: params.get(k) for k in TEMPLATE_FIELDS}, **common)
    item_raw = dict({k: raw.get(k) for k in TEMPLATE_FIELDS}, **common)
    try:
        (item,) = items_from_params(item_params, config, raw=item_raw, resolve=resolve)
    except UsageError as exc:
        where = "spread[%d] (provider %s)" % (index, target.provider) if raw.get("spread") is not None else ""
        problems.append("%s: %s" % (where, exc) if where else str(exc))
        return None
    return item


def member_item(spec: PoolSpec, member, state: str = "") -> Item:
    """The item that converges ``member`` (a ``pool_members.Member`` or a ``(target, slot)``
    pair for a new one) to ``state`` (the pool's by default). A member of a target that left the
    spread is converged from the first target's template: only its provider and id matter for a
    delete."""
    if isinstance(member, tuple):
        target, slot = member
        template = spec.templates[target]
        provider, provider_id = template.provider, ""
    else:
        target, slot = member.target, member.slot
        template = spec.templates.get(target) or spec.templates[spec.targets[0].name]
        provider, provider_id = member.provider, member.instance.id
    name = pool_members.member_name(spec.pool, slot)
    return dataclasses.replace(
        template,
        provider=provider,
        name=name,
        uid=pool_members.member_uid(spec.pool, target, slot),
        id=provider_id,
        state=state or spec.state,
        where=name,
    )
