"""metav1.Condition lists: set one condition, keeping lastTransitionTime when status is unchanged."""

from __future__ import annotations

import datetime


def now_rfc3339() -> str:
    stamp = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    return stamp.isoformat().replace("+00:00", "Z")


def find(conditions, cond_type: str):
    for cond in conditions or []:
        if cond.get("type") == cond_type:
            return cond
    return None


def is_true(conditions, cond_type: str) -> bool:
    cond = find(conditions, cond_type)
    return bool(cond) and cond.get("status") == "True"


def set_condition(
    conditions, cond_type: str, status: bool | None, reason: str, message: str, generation: int, now: str
) -> list:
    """A new list with ``cond_type`` set (``None``: Unknown, the controller cannot tell); the
    transition time moves only when the status flips."""
    text = "Unknown" if status is None else "True" if status else "False"

    def condition(since: str) -> dict:
        return {
            "type": cond_type,
            "status": text,
            "reason": reason,
            "message": message,
            "observedGeneration": generation,
            "lastTransitionTime": since,
        }

    out, replaced = [], False
    for cond in conditions or []:
        if cond.get("type") != cond_type:
            out.append(cond)
            continue
        replaced = True
        out.append(condition(cond.get("lastTransitionTime") if cond.get("status") == text else now))
    if not replaced:
        out.append(condition(now))
    return out


def without(conditions, cond_type: str) -> list:
    return [c for c in conditions or [] if c.get("type") != cond_type]
