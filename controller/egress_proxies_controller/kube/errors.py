"""One line for an error of an API call, as a log record or a message shows it.

The client's ``ApiException`` prints itself as the status line, every HTTP response header and
the whole body, over many lines: an operator needs the status and the API server's own message
(what is refused, and for whom). Anything else is its text on one line.
"""

from __future__ import annotations

import json
import logging

from . import credentials

MESSAGE_MAX = 300  # an API server's message is a sentence; a proxy's HTML error page is not


def is_api_error(exc: BaseException) -> bool:
    """An answer of the API server (or the client's own refusal): ``status`` and ``body``."""
    return isinstance(getattr(exc, "status", None), int) and hasattr(exc, "body")


def describe(exc: BaseException) -> str:
    """``HTTP <status> <reason>: <the Status object's message>`` for an API error, else the
    exception's text on one line."""
    if is_api_error(exc):
        status = exc.status
        reason = " ".join(str(getattr(exc, "reason", "") or "").split())
        line = ("HTTP %d %s" % (status, reason)).strip()
        message = _status_message(exc.body)
        return "%s: %s" % (line, message) if message else line
    return " ".join(str(exc).split()) or type(exc).__name__


def _status_message(body) -> str:
    """The ``message`` of a Kubernetes Status body, or the body's first characters."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not body:
        return ""
    try:
        doc = json.loads(body)
    except ValueError:
        doc = None
    text = doc.get("message", "") if isinstance(doc, dict) else body
    text = " ".join(str(text).split())
    return text if len(text) <= MESSAGE_MAX else text[: MESSAGE_MAX - 3] + "..."


def log_failure(log: logging.Logger, what: str, exc: BaseException) -> None:
    """``what`` failed, at ERROR: an API error on one line (the API server said why), anything
    else with its traceback (a bug's only witness). A 401 is said once, by kube/credentials.py,
    for every loop: here it is a debug line."""
    if credentials.refused(exc):
        log.debug("%s: the API server refused our credentials", what)
        return
    if is_api_error(exc):
        log.error("%s: %s", what, describe(exc))
    else:
        log.error("%s", what, exc_info=exc)
