"""Issue 40 §1, the remaining paths: no message built from a file's or a Secret's content quotes
the content (position and field name only). A sentinel secret is planted in each malformed
input; no 8-character piece of it may reach an exception's text, a log record or (for the
a log record. Covered here: gcp ``credentialsFile``,
kubernetes ``caCert``/``clientCert``/``clientKey``, libvirt ``knownHostsFile``, the controller's
auth Secrets. (The inventory plugin's cache: not covered yet.)"""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import subprocess
import tempfile
import threading
import traceback
import types

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp.api import ComputeAPI
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import sdk
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import libvirt_backend

SENTINEL = "Zq7SentinelXk93Wv2Lp8Rt"


def pieces(text: str) -> list:
    """Every 8-character piece of the sentinel found in ``text``."""
    return [SENTINEL[i : i + 8] for i in range(len(SENTINEL) - 7) if SENTINEL[i : i + 8] in text]


def said(exc: BaseException) -> str:
    """All an exception can show: its text, repr and formatted chain."""
    return "\n".join([str(exc), repr(exc), "".join(traceback.format_exception(exc))])


@pytest.fixture
def scratch():
    """A root-owned 0700 directory under /tmp (path_trust accepts it) for the planted files."""
    path = tempfile.mkdtemp(prefix="i40-leaks-")
    yield path
    subprocess.run(["rm", "-rf", path], check=True)


def plant(directory: str, name: str, content) -> str:
    path = os.path.join(directory, name)
    data = content.encode() if isinstance(content, str) else content
    with open(path, "wb") as handle:
        handle.write(data)
    os.chmod(path, 0o600)
    return path


# -- gcp credentialsFile -------------------------------------------------------------------------

_PEM_GARBAGE = "-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----\n" % (SENTINEL * 3)
GCP_FILES = {
    "malformed JSON": '{"type": "service_account", "private_key": "%s"' % SENTINEL,
    "authorized-user JSON": json.dumps(
        {"type": "authorized_user", "client_id": "x", "client_secret": SENTINEL, "refresh_token": SENTINEL}
    ),
    "JSON of the wrong shape": json.dumps([SENTINEL, {"private_key": SENTINEL}]),
    "malformed private key": json.dumps(
        {
            "type": "service_account",
            "project_id": "p",
            "private_key_id": "k",
            "private_key": _PEM_GARBAGE,
            "client_email": "sa@p.iam.gserviceaccount.com",
            "token_uri": "http://127.0.0.1:9/token",
        }
    ),
}


@pytest.mark.parametrize("case", sorted(GCP_FILES))
def test_gcp_credentials_file_problems_name_the_file_not_its_content(case, scratch, caplog):
    path = plant(scratch, "key.json", GCP_FILES[case])
    caplog.set_level(logging.DEBUG)
    with pytest.raises(Exception) as refused:
        ComputeAPI("proj", path)._creds()
    text = said(refused.value)
    assert type(refused.value).__name__ == "CredentialsProblem", text
    assert path in str(refused.value) and "credentialsFile" in str(refused.value)
    assert pieces(text + caplog.text) == []


# -- kubernetes caCert / clientCert / clientKey ------------------------------------------------


def _listen(close: bool):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []

    def accept():
        while True:
            try:
                conn = server.accept()[0]
            except OSError:
                return
            if close:
                conn.close()
            else:
                held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for conn in held:
        conn.close()


@pytest.fixture
def listener():
    """A loopback TCP port that accepts and says nothing: the client reaches its TLS setup,
    where it loads the certificate files."""
    yield from _listen(close=False)


@pytest.fixture
def closer():
    """A loopback TCP port that closes each connection at once: libssh2 has read known_hosts
    by then, and no SSH banner keeps the dial waiting."""
    yield from _listen(close=True)


@pytest.mark.parametrize("key", ["caCert", "clientCert", "clientKey"])
def test_kubernetes_certificate_files_of_garbage_are_never_quoted(key, scratch, listener, caplog):
    good_or_garbage = {
        k: plant(scratch, k + ".pem", _PEM_GARBAGE.replace("PRIVATE KEY", "CERTIFICATE"))
        for k in ("caCert", "clientCert", "clientKey")
    }
    block = {"host": "https://127.0.0.1:%d" % listener, "caCert": good_or_garbage["caCert"]}
    if key != "caCert":
        block.update(clientCert=good_or_garbage["clientCert"], clientKey=good_or_garbage["clientKey"])
    parsed = config.parse({"providers": [{"name": "k8s", "type": "kubernetes", "kubernetes": block}]})
    caplog.set_level(logging.DEBUG)
    from kubernetes import client as k8s_client

    with pytest.raises(Exception) as failed:
        api = sdk.api_client(parsed.find("k8s").block)
        k8s_client.CoreV1Api(api).list_namespace(_request_timeout=5)
    assert pieces(said(failed.value) + caplog.text) == []


# -- libvirt knownHostsFile ----------------------------------------------------------------------


def test_libvirt_known_hosts_file_with_a_malformed_line_is_never_quoted(scratch, closer, caplog):
    known = plant(scratch, "known_hosts", "127.0.0.1 ssh-ed25519 %s not-base64 %s\n" % (SENTINEL, SENTINEL))
    key = plant(scratch, "id_ed25519", _PEM_GARBAGE)
    libvirt_backend.check_credentials(key, known)  # readable, through a trusted path: handed to libssh2
    assert (
        pieces(
            libvirt_backend.uri_for(
                types.SimpleNamespace(user="u", address="127.0.0.1", socket=""), key, known, False
            )
        )
        == []
    )
    cfg = types.SimpleNamespace(ssh_key_file=key, known_hosts_file=known, insecure_ignore_host_key=False)
    host = types.SimpleNamespace(user="u", address="127.0.0.1:%d" % closer, socket="")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(Exception) as failed:
        libvirt_backend.LibvirtDialer(cfg).dial(host)
    assert pieces(said(failed.value) + caplog.text) == []


# -- the controller's auth Secrets ---------------------------------------------------------------


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


SECRETS = {
    "non-UTF-8 password": {"username": _b64(b"crawler"), "password": _b64(b"\xff\xfe" + SENTINEL.encode())},
    "invalid base64": {"username": _b64(b"crawler"), "password": SENTINEL + "=!*"},
    "wrong keys": {"user": _b64(SENTINEL.encode()), SENTINEL: _b64(SENTINEL.encode())},
    "password refused by the rule": {
        "username": _b64(b"crawler"),
        "password": _b64((SENTINEL + "\n").encode()),
    },
    "username refused by the rule": {"username": _b64((SENTINEL + ":x").encode()), "password": _b64(b"pw")},
    "htpasswd-like line": {"username": _b64(("u:" + SENTINEL).encode()), "password": _b64(b"pw")},
}


@pytest.mark.parametrize("case", sorted(SECRETS))
def test_auth_secret_problems_name_the_secret_and_key_never_a_value(case, caplog):
    from egress_proxies_controller.kube.client import Kube
    from egress_proxies_controller.proxy import auth_secret

    kube = Kube.__new__(Kube)  # the real secret_values, over a core API that answers this Secret
    kube.timeout = 5
    kube.core = types.SimpleNamespace(
        read_namespaced_secret=lambda name, namespace, **_: types.SimpleNamespace(data=SECRETS[case])
    )
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LookupError) as refused:
        auth_secret.credentials(kube, "ns", "creds")
    text = said(refused.value)
    assert str(refused.value).startswith("auth Secret ns/creds"), text
    assert refused.value.reason  # the Condition's reason; its message is str(exc), checked above
    assert pieces(text + caplog.text) == []
