"""Whether the API server refused this controller's credentials (HTTP 401), said once.

An expired token (``kubectl create token``) or a deleted ServiceAccount makes every request
fail with 401 Unauthorized, which no retry can fix: the callers' retries only repeat the
refusal. ``Refusal.watch`` sees every response of the one ApiClient the controller uses; the
first 401 is logged as ONE line saying what to do, after which /readyz fails
(``readiness.py``) and the Lease holders exit as they do when the API server cannot be
reached (``leader.py``): a restarted process reads a fresh token.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("egress_proxies_controller.kube.credentials")

UNAUTHORIZED = 401
MESSAGE = (
    "the API server refused this controller's credentials (401 Unauthorized: its token expired "
    "or was revoked, or its ServiceAccount was deleted): not ready, exiting; give it a valid "
    "token (the ServiceAccount back, or a new kubeconfig for --kubeconfig) and start it again"
)


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` is the API server's 401 (an ApiException or anything with ``status``)."""
    return getattr(exc, "status", None) == UNAUTHORIZED


class Refusal:
    def __init__(self):
        self.event = threading.Event()
        self._lock = threading.Lock()

    def is_set(self) -> bool:
        return self.event.is_set()

    def note(self) -> None:
        """Record a 401; only the first is logged."""
        with self._lock:
            if self.event.is_set():
                return
            self.event.set()
        log.error(MESSAGE)

    def then(self, action) -> None:
        """Call ``action`` (on a thread of its own) once a 401 has been noted."""
        threading.Thread(
            target=lambda: self.event.wait() and action(), name="credentials-refused", daemon=True
        ).start()

    def watch(self, api_client) -> None:
        """Note a 401 answer to any request ``api_client`` sends (a watch's too)."""
        rest = api_client.rest_client
        send = rest.request

        def request(method, url, *args, **kwargs):
            try:
                response = send(method, url, *args, **kwargs)
            except Exception as exc:
                if refused(exc):
                    self.note()
                raise
            if getattr(response, "status", None) == UNAUTHORIZED:
                self.note()
            return response

        rest.request = request


class CredentialsRefused(Exception):
    """Raised where waiting on is pointless: the API server refused the credentials (401)."""
