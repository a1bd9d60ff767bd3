# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The API server's answers on the hot paths (create, get, list), read as JSON, not as models.

Why: the client turns each Pod into about forty pydantic models; for a Pod that costs about
three times parsing its JSON (``bench/kubernetes_answers.py``), and a poll round reads every
Pod of the installation. ``read`` asks the client for the raw answer (``_preload_content=False``:
a non-2xx answer is still raised as ``ApiException``, so classify.py sees the same errors) and
checks its ``kind``: a 200 that is not the object asked for (an HTML page from a proxy in front
of the API server, a truncated body) is ``MalformedAnswer``, which classify.py retries as
Transient; it never reads as an instance or as an absence. ``about`` checks that an answer is
about the object asked for.

Pure (the standard library only), so the controller's pool loop reads its Secrets, Services and
EndpointSlices with the same checks (``pool/kube_calls.py``).
"""

from __future__ import annotations

import json


class MalformedAnswer(ValueError):
    """A 2xx answer that is not the JSON object of the kind asked for."""


def read(method, *args, kind: str, **kwargs) -> dict:
    """``method(*args, **kwargs)``'s answer as a dict of ``kind`` (``Pod``, ``PodList``, ...)."""
    response = method(*args, _preload_content=False, **kwargs)
    data = response.data
    try:
        body = json.loads(data)
    except (TypeError, ValueError):
        size = len(data or b"")
        raise MalformedAnswer(
            "the API server answered %d bytes that are not JSON where a %s was expected" % (size, kind)
        ) from None
    got = body.get("kind") if isinstance(body, dict) else type(body).__name__
    if got != kind:
        raise MalformedAnswer("the API server answered a %r where a %s was expected" % (got, kind))
    return body


def about(meta, kind: str, namespace: str, name: str) -> None:
    """Raise ``MalformedAnswer`` unless ``meta`` (an answer's metadata, a dict or the client's
    model) is about ``namespace/name``: a 200 for another object (a proxy in front of the API
    server answering with the wrong Pod) is never this instance (issue 28 §5)."""
    got = meta if isinstance(meta, dict) else {"name": meta.name, "namespace": meta.namespace}
    got_name, got_namespace = got.get("name") or "", got.get("namespace") or ""
    if (got_name, got_namespace) != (name, namespace):
        raise MalformedAnswer(
            "the API server answered about %s %s/%s where %s/%s was asked for"
            % (kind, got_namespace or "(no namespace)", got_name or "(no name)", namespace, name)
        )


def section(body: dict, key: str) -> dict:
    """``body[key]`` when it is an object, else ``{}`` (absent or null in the answer)."""
    value = body.get(key)
    return value if isinstance(value, dict) else {}
