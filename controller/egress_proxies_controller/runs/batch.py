"""One batch run's items, pure: encoding a tick's actions into the playbook's payload, and
decoding the modules' results (the runner's events) into one ``Answer`` per key.

No process is started here (executor.py runs the batch): a run that failed, timed out or was
cancelled still answers every item whose task had finished, and what is missing is Transient.
"""

from __future__ import annotations

import dataclasses
import logging

from ..proxy.reconciler import CREATE, DELETE, GET, NOT_FOUND, TRANSIENT, Answer

log = logging.getLogger("egress_proxies_controller.runs.executor")


@dataclasses.dataclass
class Batch:
    """A tick's actions of one provider, as the playbook's tasks take them."""

    answers: dict  # key -> Answer given without a run (a create whose inputs could not be read)
    instances: list  # proxy_instance's batch items (creates and deletes)
    instance_keys: list  # the key of each item, in order
    gets: dict  # provider -> [(key, provider id)]
    lists: list  # providers read with one list_by_tag (many gets this tick)

    @property
    def by_id(self) -> dict:
        """The gets read by id (their provider is not listed)."""
        return {p: entries for p, entries in self.gets.items() if p not in self.lists}

    @property
    def empty(self) -> bool:
        return not self.instances and not self.gets


def encode(actions: dict, create_fields: dict, list_threshold: int) -> Batch:
    """``{key: Action}`` -> a ``Batch``. ``create_fields`` holds each create's module fields,
    resolved before the run (``run_inputs.resolve``), or the ``LookupError`` that kept them from
    being resolved: that item alone is answered Transient, without a run."""
    answers, instances, instance_keys = {}, [], []
    gets = {}  # provider -> [(key, id)]
    for key, action in actions.items():
        if action.op in (CREATE, DELETE):
            item = {
                "provider": action.provider,
                "uid": action.uid,
                "name": action.name,
                "state": "present" if action.op == CREATE else "absent",
            }
            if action.provider_id:
                item["id"] = action.provider_id
            elif action.op == DELETE:
                # No id (a create may have run before a crash): the module finds the instance
                # by name; the namespace is where a kubernetes-provider create put it.
                item["namespace"] = key.split("/", 1)[0]
            if action.op == CREATE:
                fields = create_fields[key]  # every create's, resolved before the run
                if isinstance(fields, LookupError):  # a Secret it needs: that item only, retried
                    answers[key] = Answer(
                        ok=False,
                        error_class=TRANSIENT,
                        message=str(fields),
                        reason=getattr(fields, "reason", ""),
                    )
                    continue
                item.update(fields)
            instances.append(item)
            instance_keys.append(key)
        elif action.op == GET:
            gets.setdefault(action.provider, []).append((key, action.provider_id))
    lists = sorted(p for p, entries in gets.items() if len(entries) >= list_threshold)
    return Batch(answers, instances, instance_keys, gets, lists)


def payload(
    instances: list,
    gets: dict,
    lists: list,
    concurrency: int,
    call_timeout: float,
    stream: str = "",
    follow: float = 0.0,
    feed: str = "",
) -> dict:
    """The playbook's ``batch`` (the in-memory items file) for one run; ``stream``: the
    ``result_stream`` pipe of its instances (empty: none); ``follow``: seconds the run reads
    the instances its creates left starting (proxy_instance's ``follow``; 0: off); ``feed``:
    the ``instance_stream`` pipe more instances come through while it works (empty: none)."""
    return {
        "result_stream": stream,
        "instance_stream": feed,
        "follow": follow,
        "instances": instances,
        "gets": [{"provider": p, "ids": [i for _key, i in entries]} for p, entries in sorted(gets.items())],
        "lists": lists,
        "concurrency": concurrency,
        "call_timeout": call_timeout,
    }


def label(instances: list, gets: dict, lists: list) -> str:
    """What a run carries, for its log line and ``--run-log``."""
    return "instances=%d gets=%d lists=%d" % (len(instances), sum(len(v) for v in gets.values()), len(lists))


def failed(keys, message: str, answers: dict) -> None:
    """Every key answered Transient with ``message`` (its run did not answer it)."""
    for key in keys:
        answers[key] = Answer(ok=False, error_class=TRANSIENT, message=message)


def read_instances(res, keys: list, answers: dict) -> None:
    results = (res or {}).get("results")
    if not isinstance(results, list) or len(results) != len(keys):
        message = (res or {}).get("msg") or "proxy_instance returned no per-item results"
        for key in keys:
            answers[key] = Answer(ok=False, error_class=class_of(res), message=message)
        return
    for key, item in zip(keys, results, strict=True):
        answers[key] = answer_of(item)


def answer_of(item: dict) -> Answer:
    """One ``proxy_instance`` item result (from ``results`` or the result stream) as an Answer."""
    if item.get("failed"):
        return Answer(
            ok=False,
            error_class=item.get("error_class") or TRANSIENT,
            message=item.get("msg", ""),
            instance=item,
            reason=item.get("reason") or "",
        )
    return Answer(ok=True, instance=item)


def read_gets(res, gets: dict, answers: dict) -> None:
    per_provider = {}
    for item in (res or {}).get("results") or []:
        if isinstance(item, dict) and isinstance(item.get("item"), dict):
            per_provider[item["item"].get("provider")] = item
    for provider, entries in gets.items():
        result = per_provider.get(provider)
        if result is None or (
            result.get("failed")
            and not result.get("instances")
            and not result.get("not_found")
            and not result.get("errors")
        ):
            message = (result or {}).get("msg") or "proxy_info returned no result for provider %s" % provider
            cls = class_of(result)
            for key, _pid in entries:
                answers[key] = Answer(ok=False, error_class=cls, message=message)
            continue
        found = {i["id"]: i for i in result.get("instances") or []}
        missing = set(result.get("not_found") or [])
        failed = {e["id"]: e for e in result.get("errors") or []}
        for key, provider_id in entries:
            if provider_id in found:
                answers[key] = Answer(ok=True, instance=found[provider_id])
            elif provider_id in missing:
                answers[key] = Answer(ok=False, error_class=NOT_FOUND, message="%s not found" % provider_id)
            elif provider_id in failed:
                answers[key] = Answer(
                    ok=False,
                    error_class=failed[provider_id]["error_class"],
                    message=failed[provider_id]["msg"],
                )
            else:
                answers[key] = Answer(
                    ok=False, error_class=TRANSIENT, message="no answer for %s" % provider_id
                )


def read_lists(res, lists: dict, answers: dict) -> dict:
    per_provider = {}
    for item in (res or {}).get("results") or []:
        if isinstance(item, dict):
            per_provider[item.get("item")] = item
    misses = {}
    for provider, entries in lists.items():
        result = per_provider.get(provider) or {}
        if result.get("errors") or not isinstance(result.get("instances"), list):
            if not result.get("errors"):
                log.warning(
                    "list of %s: no result in the run's events; reading %d by id", provider, len(entries)
                )
            misses[provider] = entries  # the list could not be read: fall back to gets
            continue
        found = {i["id"]: i for i in result["instances"]}
        for key, provider_id in entries:
            if provider_id in found:
                answers[key] = Answer(ok=True, instance=found[provider_id])
            else:
                misses.setdefault(provider, []).append((key, provider_id))
    return misses


def class_of(res) -> str:
    """A whole-module failure's class; a configuration error (``problems``) is the controller's
    state, never a Proxy's: Transient, so no item is latched by it."""
    res = res or {}
    if res.get("problems"):
        return TRANSIENT
    return res.get("error_class") or TRANSIENT
