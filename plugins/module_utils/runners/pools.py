# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Exactly ``count`` members of a pool, spread over targets: the runner behind ``proxy_pool``.

One run: list every provider of the spread (one ``list_by_tag`` each; a list that fails fails
the run before anything changes, since a pool cannot be counted from a partial view); split
``count`` over the targets (``pool_split``); create what each target lacks in the smallest free
slots; when a target's create fails Permanent or Quota, skip that target (it keeps every member
it has that has not failed: Running, or on its way like those made in this run) and split
again, so its share goes to the others (a target whose provider knows what it can ever hold,
``Provider.capacity``, is capped there from the start); then converge the members that stay
(``proxy_instance``'s present: a Stopped one is restarted, credentials rotated) and delete the
extras, Terminated first, then newest not-Running, then the oldest (``pool_members``). Where no
pool lock serialised the run (``pool_lock``: only the local provider has one), list the pool
again and trim it to ``count`` by a fixed order (``pool_members.trim``), so two runs at once
leave ``count`` members. Every create, check and delete is ``proxy_instance``'s own
``Converger``, ownership checks included, run through ``batch``.
"""

from __future__ import annotations

import datetime

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import STATE_ABSENT
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import (
    batch,
    instances,
    pool_lock,
    pool_members,
    pool_params,
    pool_split,
)

SKIPPING = (errors.PERMANENT, errors.QUOTA_EXCEEDED)
MEMBER_FIELDS = ("name", "id", "uid", "provider", "state", "ip", "created_at", "installation")


def list_members(pm, spec, timeout: float, concurrency: int) -> list:
    """Every member of the pool on the spread's providers; raises when a list fails."""
    providers = sorted({t.provider for t in spec.targets})

    def one(name):
        provider = pm.provider(name)
        listed = provider.list_by_tag(Deadline(timeout))
        return pool_members.members_of(spec.pool, name, listed, provider.backend_key())

    outcomes = batch.run(providers, lambda n: (None, one(n)), lambda n, exc: (exc, []), concurrency)
    for exc, _found in outcomes:
        if exc is not None:
            raise exc if isinstance(exc, errors.ProviderError) else errors.transient("list", "", "", exc)
    return sorted((m for _exc, found in outcomes for m in found), key=lambda m: m.slot)


def _member_from(target: str, slot: int, provider: str, result: dict) -> pool_members.Member:
    """A member just created (or, in check mode, to be): counted as the newest."""
    state = result.get("state")
    instance = contract.Instance(
        id=result.get("id", ""),
        name=result["name"],
        uid=result.get("uid", ""),
        state=state
        if state in contract.STATES and (state != contract.RUNNING or result.get("ip"))
        else contract.PROVISIONING,
        ip=result.get("ip", "") if state == contract.RUNNING else "",
        created_at=datetime.datetime.now(datetime.UTC),
        installation=result.get("installation", ""),
    )
    return pool_members.Member(provider, target, slot, instance)


def _key(result: dict) -> tuple:
    """A member result's key: one name may be on two providers (a race before pool locks)."""
    return (result.get("provider", ""), result["name"])


class Growth:
    """The create rounds of one run: what was made, what failed, which targets are skipped."""

    def __init__(self, pm, spec, members: list, converger, concurrency: int):
        self.pm, self.spec, self.converger, self.concurrency = pm, spec, converger, concurrency
        self.members = list(members)
        self.providers = {t.name: t.provider for t in spec.targets}
        self.tried = {m.slot for m in members}
        self.fresh = set()  # names made in this run
        self.created, self.failures, self.degraded = [], [], {}
        # target -> (most its provider can ever hold, why), where known without a call
        # (Provider.capacity): a share past it is cut up front, never tried and failed member
        # by member (issue 28 §7: thousands of identical failures in one result).
        self.rooms = {}
        for target in spec.targets:
            room = pm.provider(target.provider).capacity()
            if room is not None:
                self.rooms[target.name] = room

    def caps(self) -> dict:
        """Target -> the most it may have: a skipped target what it holds
        (``pool_members.holds``), a target whose provider has a known capacity no more than that."""
        caps = {t: room[0] for t, room in self.rooms.items()}
        for t in self.degraded:
            held = pool_members.holds(self.members, t, self.providers[t])
            caps[t] = min(caps.get(t, held), held)
        return caps

    def desired(self) -> dict:
        return pool_split.split(self.spec.count, list(self.spec.targets), self.caps())

    def limited(self, desired: dict) -> dict:
        """Targets (not skipped) whose share was cut to their provider's capacity, reported as
        a skipped target is (``degraded``, a warning): the rest of their share went elsewhere."""
        held = {t: pool_members.holds(self.members, t, self.providers[t]) for t in self.degraded}
        uncut = pool_split.split(self.spec.count, list(self.spec.targets), held)
        out = {}
        for target in self.spec.targets:
            room = self.rooms.get(target.name)
            if room is None or target.name in self.degraded or desired[target.name] >= uncut[target.name]:
                continue
            out[target.name] = {
                "target": target.name,
                "provider": target.provider,
                "error_class": errors.QUOTA_EXCEEDED,
                "msg": "a share of %d is more than provider %s can ever hold (%s); it holds at most %d"
                % (uncut[target.name], target.provider, room[1], room[0]),
            }
        return out

    def run(self) -> dict:
        """Create until every target has its share or no new target is skipped; the split."""
        while True:
            desired = self.desired()
            kept, _to_go = pool_members.choose(self.members, desired, self.providers)
            wanted = []
            for target in self.spec.targets:
                lacking = desired[target.name] - sum(1 for m in kept if m.target == target.name)
                wanted.extend([target.name] * max(0, lacking))
            if not wanted:
                return desired
            slots = pool_members.free_slots(self.tried, len(wanted))
            self.tried.update(slots)
            items = [pool_params.member_item(self.spec, pair) for pair in zip(wanted, slots, strict=True)]
            results = batch.run(items, self.converger.converge, instances.failure, self.concurrency)
            if not self._take(wanted, slots, items, results):
                return self.desired()

    def _take(self, wanted, slots, items, results) -> bool:
        """Record a round; whether it skipped a new target (then the split changes)."""
        newly = False
        for target, slot, item, result in zip(wanted, slots, items, results, strict=True):
            if not result.get("failed"):
                self.members.append(_member_from(target, slot, item.provider, result))
                self.fresh.add(item.name)
                self.created.append(result)
                continue
            self.failures.append(result)
            if result.get("error_class") in SKIPPING and target not in self.degraded:
                self.degraded[target] = {
                    "target": target,
                    "provider": item.provider,
                    "error_class": result["error_class"],
                    "msg": result["msg"],
                }
                newly = True
        return newly


def _member_dict(member, result) -> dict:
    source = result if result is not None else member.instance.as_dict(member.provider)
    out = {k: source.get(k, "") for k in MEMBER_FIELDS}
    out.update(target=member.target, slot=member.slot)
    return out


def _finish(pm, spec, kept, to_go, converger, concurrency, fresh) -> tuple:
    """Converge the members that stay (not the ones just made) and delete ``to_go``."""
    stay = [m for m in kept if m.name not in fresh]
    items = [pool_params.member_item(spec, m) for m in stay]
    items += [pool_params.member_item(spec, m, STATE_ABSENT) for m in to_go]
    results = batch.run(items, converger.converge, instances.failure, concurrency)
    return results[: len(stay)], results[len(stay) :]


def _targets_report(spec, desired: dict, kept: list, degraded: dict) -> list:
    out = []
    for target in spec.targets:
        skipped = degraded.get(target.name)
        out.append(
            {
                "name": target.name,
                "provider": target.provider,
                "weight": target.weight,
                "desired": desired.get(target.name, 0),
                "members": sum(1 for m in kept if m.target == target.name),
                "degraded": skipped is not None,
                "reason": skipped["msg"] if skipped else "",
            }
        )
    return out


def run(pm) -> dict:
    """The ``proxy_pool`` runner."""
    spec = pool_params.spec_from_params(pm.params, pm.raw_params, pm.config, pm.provider)
    timeout = float(pm.params["timeout"])
    # Under a pool lock (a local provider in the spread) no other run creates meanwhile: no trim.
    settle = not pm.check_mode and not pool_lock.paths(pm, spec)
    with pool_lock.held(pm, spec, Deadline(timeout)):
        return _run(pm, spec, timeout, settle)


def _run(pm, spec, timeout: float, settle: bool) -> dict:
    """One run under the pool's locks: list, grow, converge and delete, then list again and trim."""
    concurrency = int(pm.params["concurrency"])
    before = list_members(pm, spec, timeout, concurrency)
    converger = instances.Converger(pm, timeout, check_fixed=False)  # members keep their port
    if spec.state == STATE_ABSENT:
        growth = None
        desired, kept, to_go = {}, [], pool_members.delete_order(before)
    else:
        growth = Growth(pm, spec, before, converger, concurrency)
        desired = growth.run()
        kept, to_go = pool_members.choose(growth.members, desired, growth.providers)
    fresh = growth.fresh if growth else set()
    synced, removed = _finish(pm, spec, kept, to_go, converger, concurrency, fresh)
    by_key = {_key(r): r for r in (growth.created if growth else [])}
    by_key.update({_key(r): r for r in synced if not r.get("failed")})
    settle_failures = []
    if growth is not None and settle:
        kept, trimmed, settle_failures = _settle(pm, spec, timeout, concurrency, converger, kept, to_go)
        removed = removed + trimmed
        if not settle_failures:
            by_key = {}  # the members as the last listing has them
    create_failures = growth.failures if growth else []
    other_failures = [r for r in synced + removed if r.get("failed")] + settle_failures
    degraded = dict(growth.limited(desired), **growth.degraded) if growth else {}
    members = [_member_dict(m, by_key.get((m.provider, m.name))) for m in sorted(kept, key=lambda m: m.slot)]
    out = {
        "changed": bool(fresh) or any(r.get("changed") for r in synced + removed),
        "members": members,
        "created": sorted(
            (_ref(r) for r in (growth.created if growth else [])), key=lambda r: (r["slot"], r["provider"])
        ),
        "deleted": [_ref(r) for r in removed if r.get("changed") and not r.get("failed")],
        "targets": _targets_report(spec, desired, kept, degraded),
        "degraded": list(degraded.values()),
        "failures": create_failures + other_failures,
    }
    for skipped in degraded.values():
        pm.module.warn(
            "proxy_pool: target %s (provider %s) skipped, its share went to the others: %s"
            % (skipped["target"], skipped["provider"], skipped["msg"])
        )
    if pm.diff_mode:
        out["diff"] = {
            "before": {"members": [m.name for m in before]},
            "after": {"members": [m["name"] for m in members]},
            "before_header": "pool %s" % spec.pool,
            "after_header": "pool %s" % spec.pool,
        }
    _fail_if_short(spec, out, create_failures, other_failures, degraded)
    return out


def _settle(pm, spec, timeout: float, concurrency: int, converger, kept: list, to_go: list) -> tuple:
    """List the pool again after this run's creates and deletes, and trim it to ``count``
    (``pool_members.trim``): where no lock serialises two runs of the pool (gcp, kubernetes,
    libvirt), the other may have created meanwhile, and whichever run lists last leaves exactly
    ``count`` (issue 28 §3). ``(kept, trim results, failures)``: the members are the ones this
    listing keeps; a list that fails leaves this run's own view and fails the task."""
    going = {m.identity for m in to_go}  # deleted by this run: a listing may still show them
    try:
        listed = [m for m in list_members(pm, spec, timeout, concurrency) if m.identity not in going]
    except errors.ProviderError as exc:
        failure = {
            "name": "",
            "id": "",
            "uid": "",
            "provider": exc.provider_name,
            "state": "",
            "changed": False,
            "failed": True,
            "error_class": exc.error_class,
            "msg": "pool %s: listing the members again after the run: %s" % (spec.pool, exc),
        }
        return kept, [], [failure]
    providers = {t.name: t.provider for t in spec.targets}
    settled, surplus = pool_members.trim(listed, spec.count, providers)
    items = [pool_params.member_item(spec, m, STATE_ABSENT) for m in surplus]
    return settled, batch.run(items, converger.converge, instances.failure, concurrency), []


def _ref(result: dict) -> dict:
    """A created or deleted member as ``created``/``deleted`` report it: provider and name (one
    name may be on two providers, briefly, where two runs raced), with its id, target and slot."""
    parsed = pool_members.parse_uid(result.get("uid", ""))
    return {
        "provider": result.get("provider", ""),
        "name": result["name"],
        "id": result.get("id", ""),
        "target": parsed[1] if parsed else "",
        "slot": parsed[2] if parsed else -1,
    }


def _fail_if_short(spec, out: dict, create_failures: list, other_failures: list, degraded: dict) -> None:
    """The task fails on a failure no skipped target absorbed (only a create's can be: that is
    what skips a target), or when the pool is short."""
    absorbed = {d["target"] for d in degraded.values()}
    hard = [
        f
        for f in create_failures
        if not (f.get("error_class") in SKIPPING and _target_of(spec, f) in absorbed)
    ] + other_failures
    short = spec.state != STATE_ABSENT and len(out["members"]) < spec.count
    if not hard and not short:
        return
    parts = ["%s" % f["msg"] for f in hard[:5]]
    if short:
        parts.insert(0, "pool %s has %d of %d members" % (spec.pool, len(out["members"]), spec.count))
    out["failed_msg"] = "; ".join(parts)
    out["error_class"] = (hard[0] if hard else out["failures"][0] if out["failures"] else {}).get(
        "error_class", errors.PERMANENT
    )


def _target_of(spec, result: dict) -> str:
    parsed = pool_members.parse_uid(result.get("uid", ""))
    return parsed[1] if parsed else ""
