"""The fake's OAuth 2.0 token endpoint (``POST /token``), and which bearer tokens the API takes.

Like Google's: an authorized-user credentials file (``token_uri`` pointing here) refreshes with
the ``refresh_token`` grant (RFC 6749 §6): a known client and refresh token get
``{"access_token", "expires_in", "token_type", "scope"}``; an unknown or revoked refresh token
400 ``invalid_grant`` "Token has been expired or revoked."; an unknown client 401
``invalid_client`` "The OAuth client was not found.". A service-account key never comes here:
google-cloud-compute self-signs a JWT with it (google-auth's ``always_use_jwt_access``), which
the API front accepts when its RS256 signature verifies with a registered public key, as the
real API verifies it against the account's keys.

Faults: ``refuse(status, error, description)`` answers every refresh with that error;
``hang()`` never answers; ``trickle()`` answers 200 and then one byte per interval until stopped.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import urllib.parse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.serialization import load_pem_public_key

PATH = "/token"


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class TokenEndpoint:
    def __init__(self):
        self.clients = {}  # client_id -> client_secret
        self.refresh_tokens = set()
        self.public_keys = {}  # service-account email -> PEM bytes
        self.issued = set()
        self.refreshes = 0  # token requests received
        self.mode = ("ok",)
        self.stopped = threading.Event()
        self._lock = threading.Lock()

    # -- set up by tests ---------------------------------------------------------------------

    def add_user(self, client_id: str, client_secret: str, refresh_token: str) -> None:
        self.clients[client_id] = client_secret
        self.refresh_tokens.add(refresh_token)

    def add_service_account(self, email: str, public_key_pem: bytes) -> None:
        self.public_keys[email] = public_key_pem

    def refuse(self, status: int, error: str, description: str) -> None:
        self.mode = ("refuse", status, error, description)

    def hang(self) -> None:
        self.mode = ("hang",)

    def trickle(self, interval: float = 0.2) -> None:
        self.mode = ("trickle", interval)

    # -- the API front's check -------------------------------------------------------------

    def accepts(self, authorization: str) -> bool:
        """An ``Authorization`` header with a token issued here, or a service account's
        self-signed JWT whose signature verifies."""
        scheme, _space, token = authorization.partition(" ")
        if scheme != "Bearer":
            return False
        if token in self.issued:
            return True
        try:
            header, payload, signature = token.split(".")
            claims = json.loads(_b64(payload))
            pem = self.public_keys.get(claims.get("iss", ""))
            if pem is None:
                return False
            load_pem_public_key(pem).verify(
                _b64(signature),
                ("%s.%s" % (header, payload)).encode("ascii"),
                padding.PKCS1v15(),
                hashes.SHA256(),
            )
        except (ValueError, InvalidSignature):
            return False
        return True

    # -- the endpoint ----------------------------------------------------------------------

    def serve(self, handler, raw: bytes) -> None:
        with self._lock:
            self.refreshes += 1
        mode = self.mode
        if mode[0] == "hang":
            self.stopped.wait()
            return
        if mode[0] == "trickle":
            self._trickle(handler, mode[1])
            return
        if mode[0] == "refuse":
            handler._send(mode[1], {"error": mode[2], "error_description": mode[3]})
            return
        form = {k: v[-1] for k, v in urllib.parse.parse_qs(raw.decode("utf-8", "replace")).items()}
        status, body = self._refresh(form)
        handler._send(status, body)

    def _refresh(self, form: dict) -> tuple:
        if form.get("grant_type") != "refresh_token":
            return 400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type."}
        client = form.get("client_id", "")
        if client not in self.clients or self.clients[client] != form.get("client_secret"):
            return 401, {"error": "invalid_client", "error_description": "The OAuth client was not found."}
        if form.get("refresh_token") not in self.refresh_tokens:
            return 400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."}
        token = "ya29.fake-" + secrets.token_urlsafe(16)
        with self._lock:
            self.issued.add(token)
        return 200, {
            "access_token": token,
            "expires_in": 3599,
            "token_type": "Bearer",
            "scope": form.get("scope", ""),
        }

    def _trickle(self, handler, interval: float) -> None:
        try:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json; charset=UTF-8")
            handler.send_header("Content-Length", "100000")
            handler.end_headers()
            while not self.stopped.is_set():
                handler.wfile.write(b" ")
                handler.wfile.flush()
                self.stopped.wait(interval)
        except OSError:
            return
