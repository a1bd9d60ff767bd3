# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Desired state for proxy instances: the runner behind ``proxy_instance``.

``present`` makes sure the instance exists (get, then create on NotFound; a Stopped instance
is handed to ``create`` again, which restarts it where the backend can); ``absent`` makes sure it
is gone (delete, also when get fails permanently, which is how an instance on a removed host
is released). Every item of a batch is validated before anything is touched, so bad input
changes nothing (an item streamed in while the run works, ``instance_stream``, is validated as
its line is read, before its own work begins). ``changed`` is decided in one place: whether a
mutating call was (or, in check mode, would have been) made.
"""

from __future__ import annotations

import dataclasses
import time

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract, errors, names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import UsageError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import ownership
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import (
    STATE_PRESENT,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import (
    batch,
    follow,
    instance_diff,
    instance_stream,
    result_stream,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.instance_items import (
    InvalidItem,
    Item,
    items_from_params,
    request_of,
)

ABSENT = "absent"
POLL_INTERVAL_SECONDS = 1.0


def _result(item: Item, changed: bool, instance=None, provider_id: str = "", state: str = "") -> dict:
    if instance is not None:
        out = instance.as_dict(item.provider)
    else:
        out = {
            "id": provider_id,
            "name": item.name,
            "uid": item.uid,
            "state": state or ABSENT,
            "ip": "",
            "created_at": "",
            "installation": "",
            "provider": item.provider,
        }
    out.update(changed=changed, failed=False)
    return out


def failure(item: Item, exc: Exception, provider_id: str = "") -> dict:
    """The result of an item whose provider call failed (the id is kept when one is known)."""
    result = {
        "id": provider_id or item.id,
        "name": item.name,
        "uid": item.uid,
        "provider": item.provider,
        "state": "",
        "changed": False,
        "failed": True,
        "error_class": errors.class_of(exc),
        "msg": "%s%s" % (item.where + ": " if item.where else "", exc),
    }
    if getattr(exc, "reason", ""):
        result["reason"] = exc.reason
    return result


def _invalid(item: InvalidItem) -> dict:
    uid = item.values.get("uid") or ""
    return {
        "id": item.values.get("id") or "",
        "name": item.values.get("name") or (names.name_from_uid(uid) if uid else ""),
        "uid": uid,
        "provider": item.values.get("provider") or "",
        "state": "",
        "changed": False,
        "failed": True,
        "error_class": errors.PERMANENT,
        "msg": item.message,
    }


class Converger:
    """Converges items against providers of one ``ProxyModule``."""

    def __init__(self, pm, timeout: float, check_fixed: bool = True, follows: bool = False):
        """``check_fixed``: refuse a present item whose fixed fields (port) differ from the
        existing instance's (``proxy_instance``); a pool's members keep theirs by design.
        ``follows``: a follower reads the instances left starting (``follow``), so a create
        answers without reading its instance back."""
        self.check_fixed, self.follows = check_fixed, follows
        self.in_place = set()  # (provider, name) of the items changed in place (auth rotated)
        self.pm = pm
        self.timeout = timeout

    def converge(self, item: Item) -> dict:
        provider = self.pm.provider(item.provider)
        deadline = Deadline(self.timeout)
        if item.state == STATE_PRESENT:
            return self._present(provider, item, deadline)
        return self._absent(provider, item, deadline)

    def _present(self, provider, item: Item, deadline) -> dict:
        provider_id = item.id or provider.id_for(item.name, item.placement, item.namespace or "") or ""
        existing = None
        if provider_id:
            try:
                existing = provider.get(provider_id, deadline)
            except errors.ProviderError as exc:
                if exc.error_class != errors.NOT_FOUND:
                    return failure(item, exc, provider_id)
                stray = _stray_id(provider, item)
                if stray:
                    return failure(item, errors.permanent("create", provider.name, item.id, stray), item.id)
        if existing is not None:
            refusal = ownership.adoption_refusal(
                existing, item.uid, self.pm.config.installation, item.provider
            )
            if refusal:  # adopt only our own instance, never an unmarked one
                return failure(
                    item, errors.permanent("create", provider.name, provider_id, refusal), provider_id
                )
            try:
                refusal = self._fixed_refusal(provider, item, existing, deadline)
            except errors.ProviderError as exc:  # the fixed fields could not be read back
                return failure(item, exc, existing.id)
            if refusal:
                return failure(
                    item, errors.port_fixed("create", provider.name, existing.id, refusal), existing.id
                )
            if existing.state in (contract.RUNNING, contract.PROVISIONING):
                changed = False
                if item.auth is not None and provider.supports_auth:  # rotated (or added) since
                    try:
                        changed = provider.sync_auth(
                            existing.id, item.auth, deadline, apply=not self.pm.check_mode
                        )
                    except errors.ProviderError as exc:
                        return failure(item, exc, existing.id)
                if changed:
                    self.in_place.add((item.provider, existing.name))
                return self._waited(provider, item, _result(item, changed, existing), existing)
        if self.pm.check_mode:
            return _result(item, True, existing, provider_id, ABSENT if existing is None else "")
        try:
            provider_id = provider.create(request_of(item), deadline)
        except errors.ProviderError as exc:
            return failure(item, exc, provider_id)
        if self.follows and followed(item):
            # The follower reads it within a second (follow.py): a read now would only say it
            # is starting, one more call per instance on a backend a burst already keeps busy.
            instance = contract.Instance(
                id=provider_id, name=item.name, uid=item.uid, state=contract.PROVISIONING
            )
            return _result(item, True, instance)
        try:
            instance = provider.get(provider_id, deadline)
        except errors.ProviderError as exc:
            if exc.error_class != errors.TRANSIENT:
                return dict(failure(item, exc, provider_id), changed=True)
            # Submitted, not readable yet (an insert still being accepted): report it starting.
            instance = contract.Instance(
                id=provider_id, name=item.name, uid=item.uid, state=contract.PROVISIONING
            )
        return self._waited(provider, item, _result(item, True, instance), instance)

    def _fixed_refusal(self, provider, item: Item, existing, deadline) -> str:
        """Why ``item`` asks for what the existing instance cannot change in place, or ``""``."""
        if not self.check_fixed:
            return ""
        port = provider.fixed_fields(existing.id, deadline).get("port")
        if port is None or port == item.port:
            return ""
        return (
            "port: instance %s listens on port %d, not %d, and a port cannot change in place "
            "(delete the instance and create it again, or ask for port %d)"
            % (existing.name, port, item.port, port)
        )

    def _absent(self, provider, item: Item, deadline) -> dict:
        provider_id = item.id or provider.id_for(item.name, item.placement, item.namespace or "") or ""
        if not provider_id:
            provider_id = self._find_by_name(provider, item, deadline)
            if not provider_id:
                return _result(item, False)
        before = None
        try:
            before = provider.get(provider_id, deadline)
        except errors.ProviderError as exc:
            if exc.error_class == errors.NOT_FOUND:
                return _result(item, False, provider_id=provider_id)
            if exc.error_class not in (errors.PERMANENT, errors.QUOTA_EXCEEDED):
                return failure(item, exc, provider_id)
            # Permanent (e.g. its host left the config) or an async quota failure the provider
            # still reports: delete anyway, which may well succeed.
        if before is not None:
            refusal = ownership.refusal(
                before, item.uid, self.pm.config.installation, item.force, item.provider
            )
            if refusal:
                return failure(
                    item, errors.permanent("delete", provider.name, provider_id, refusal), provider_id
                )
            item = dataclasses.replace(item, name=before.name, uid=before.uid)
        if self.pm.check_mode:
            return _result(item, True, provider_id=provider_id, state="deleting")
        unreached = ""
        try:
            provider.delete(provider_id, deadline)
            try:
                remaining = provider.get(provider_id, deadline)
            except errors.ProviderError as exc:
                # NotFound is gone; so is an id that can never resolve (its host left the
                # configuration) once its delete succeeded: nothing is left we could reach.
                if exc.error_class != errors.NOT_FOUND and (
                    before is not None or exc.error_class != errors.PERMANENT
                ):
                    raise
                remaining = None
                unreached = getattr(exc, "reason", "") if exc.error_class == errors.PERMANENT else ""
        except errors.ProviderError as exc:
            return failure(item, exc, provider_id)
        result = _result(item, True, remaining, provider_id)
        if unreached:
            # Released, not proven deleted: the caller (and its log) must be able to tell.
            result["reason"] = unreached
        if remaining is not None and item.wait:
            return self._wait_gone(provider, item, provider_id, result)
        return result

    def _find_by_name(self, provider, item: Item, deadline) -> str:
        for instance in provider.list_by_tag(deadline):
            if instance.name == item.name:
                return instance.id
        return ""

    def _waited(self, provider, item: Item, result: dict, instance) -> dict:
        if not item.wait or self.pm.check_mode or instance.state == contract.RUNNING:
            return result
        deadline = Deadline(item.wait_timeout)
        last = instance
        while True:
            try:
                deadline.sleep(POLL_INTERVAL_SECONDS)
            except Exception:
                break
            try:
                last = provider.get(instance.id, Deadline(min(self.timeout, item.wait_timeout)))
            except errors.ProviderError as exc:
                if exc.error_class == errors.TRANSIENT:
                    continue
                return dict(failure(item, exc, instance.id), changed=result["changed"])
            if last.state == contract.RUNNING:
                return dict(_result(item, result["changed"], last))
            if last.state in (contract.STOPPED, contract.TERMINATED):
                break
        exc = errors.transient(
            "get",
            provider.name,
            instance.id,
            "instance did not reach Running within %gs (last state %s)" % (item.wait_timeout, last.state),
        )
        return dict(failure(item, exc, instance.id), changed=result["changed"], state=last.state)

    def _wait_gone(self, provider, item: Item, provider_id: str, result: dict) -> dict:
        deadline = Deadline(item.wait_timeout)
        started = time.monotonic()
        while True:
            try:
                deadline.sleep(POLL_INTERVAL_SECONDS)
                provider.get(provider_id, Deadline(self.timeout))
            except errors.ProviderError as exc:
                if exc.error_class == errors.NOT_FOUND:
                    return dict(result, state=ABSENT, ip="")
                if exc.error_class != errors.TRANSIENT:
                    return dict(failure(item, exc, provider_id), changed=True)
            except Exception:
                break
        exc = errors.transient(
            "delete",
            provider.name,
            provider_id,
            "instance still present %.0fs after delete" % (time.monotonic() - started),
        )
        return dict(failure(item, exc, provider_id), changed=True)


def _stray_id(provider, item: Item) -> str:
    """Why an ``id`` that names nothing must not become a create, or ``""`` when it may.

    Creating from it would make an instance of ``item.name`` elsewhere and hand back another id,
    silently; only the id that the name (the uid's) gives is a plain "not created yet"."""
    if not item.id:
        return ""
    try:
        named = provider.name_in_id(item.id)
    except ValueError as exc:
        return str(exc)
    if named is None or named == item.name:
        return ""
    return "id %s names no instance, and it is not the id of %s (the instance of uid %s)" % (
        item.id,
        item.name,
        item.uid,
    )


def diff_of(item, result: dict, in_place=frozenset()):
    """The ``--diff`` entry of one converged item, or ``None`` when it changed nothing;
    ``in_place`` holds the ``(provider, name)`` of the items changed in place (their diff says
    what changed, not an instance appearing)."""
    if isinstance(item, InvalidItem) or not result.get("changed"):
        return None
    side = instance_diff.side_of(
        result.get("name") or item.name, item.provider, item.placement, item.port, result.get("id", "")
    )
    if item.state == STATE_PRESENT and (item.provider, result.get("name")) in in_place:
        return instance_diff.credentials_changed(side)
    if item.state == STATE_PRESENT:
        return instance_diff.appeared(side)
    return instance_diff.disappeared(side)


def _stream(pm):
    """The ``result_stream`` writer (batch form only), or None; a path that is not a pipe or
    FIFO is refused before any item is touched."""
    path = pm.params.get(result_stream.FIELD)
    if path is None:
        return None
    if pm.params.get("instances") is None:
        raise UsageError("%s: only with instances (the batch form)" % result_stream.FIELD)
    refused = result_stream.problem(path)
    if refused:
        raise UsageError(refused)
    return result_stream.ResultStream(path)


def _follower(pm, stream):
    """The ``follow`` reader of the instances left starting (batch form, present items), or
    None; a bad window is refused before any item is touched."""
    window = pm.params.get(follow.FIELD)
    refused = follow.problem(window)
    if refused:
        raise UsageError(refused)
    if not window:
        return None
    if pm.params.get("instances") is None:
        raise UsageError("%s: only with instances (the batch form)" % follow.FIELD)
    if pm.check_mode:
        return None  # nothing was created: nothing to read again
    on_done = stream.write if stream is not None else (lambda index, result: None)
    return follow.Follower(pm.provider, window, on_done, int(pm.params["concurrency"]))


def followed(item) -> bool:
    """Whether ``item``'s instance, when left starting, is read again by the follower: present
    items without ``wait`` (an item that waits reads its instance itself)."""
    return not isinstance(item, InvalidItem) and item.state == STATE_PRESENT and not item.wait


def _finished(items: list, stream, follower):
    """What hears each item's result as it finishes: the follower first (it answers a starting
    instance later), else the stream; None when nobody listens. ``items`` may grow while the
    run works (``instance_stream``): an item is in it before its work begins."""
    if follower is None:
        return stream.write if stream is not None else None

    def finished(index: int, result: dict) -> None:
        item = items[index]
        taken = followed(item) and follower.take(index, item.provider, result)
        if not taken and stream is not None:
            stream.write(index, result)

    return finished


def run(pm) -> dict:
    """The ``proxy_instance`` runner: returns ``instance`` (single form) or ``results`` (the
    listed items, then the streamed ones)."""
    refused = instance_stream.refusal(pm.params)
    if refused:  # a bad path, or options it cannot go with: before even the listed items are read
        raise UsageError(refused)
    isolate = pm.params.get("invalid_items") == "fail_item"
    items = items_from_params(pm.params, pm.config, isolate=isolate, raw=pm.raw_params, resolve=pm.provider)

    def work(item):
        if isinstance(item, InvalidItem):
            return _invalid(item)
        return converger.converge(item)

    feed = None  # the reader of further items (``items`` grows by each one read)
    if pm.params.get(instance_stream.FIELD) is not None:
        feed = instance_stream.InstanceStream(pm, items)
    stream = _stream(pm)
    follower = _follower(pm, stream)
    converger = Converger(pm, float(pm.params["timeout"]), follows=follower is not None)
    try:
        results = batch.run(
            items,
            work,
            failure,
            concurrency=int(pm.params["concurrency"]),
            on_done=_finished(items, stream, follower),
            more=feed,
        )
        if follower is not None:
            results = follower.finish(results)
    finally:
        if stream is not None:
            stream.close()
    if feed is not None and feed.stopped:
        pm.module.warn(feed.stopped)
    unreached = [
        r for r in results if not r.get("failed") and r.get("reason") == errors.REASON_HOST_NOT_CONFIGURED
    ]
    for released in unreached:
        pm.module.warn(
            "%s: released without reaching it (%s): its host is not in the provider's config; "
            "put the host back and proxy_gc collects its instance" % (released["id"], released["reason"])
        )
    changed = any(r.get("changed") for r in results)
    failed = [r for r in results if r.get("failed")]
    out = {"changed": changed}
    if pm.diff_mode:
        diffs = [
            d
            for d in (diff_of(i, r, converger.in_place) for i, r in zip(items, results, strict=True))
            if d is not None
        ]
        if pm.params.get("instances") is None:
            out["diff"] = diffs[0] if diffs else {"before": {}, "after": {}}
        else:
            out["diff"] = diffs
    if pm.params.get("instances") is None:
        single = results[0]
        if single.get("failed"):
            out.update(failed_msg=single["msg"], error_class=single["error_class"], instance=single)
            return out
        out["instance"] = single
        return out
    out["results"] = results
    if failed:
        out["failed_msg"] = "%d of %d instances failed: %s" % (
            len(failed),
            len(results),
            "; ".join(r["msg"] for r in failed[:5]),
        )
        out["error_class"] = failed[0]["error_class"]
    return out
