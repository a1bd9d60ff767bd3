# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""How the kubernetes block reaches its cluster: the connection options a kubernetes.core user
knows, and the ``K8S_AUTH_*`` variables that AWX's "OpenShift or Kubernetes API Bearer Token"
credential (and kubernetes.core) set.

Same rules as kubernetes.core's module_utils (``k8s/client.py``): an option written in the
block wins over its variable; the long variable name wins over the short one
(``K8S_AUTH_CA_CERT`` over ``K8S_AUTH_SSL_CA_CERT``); a boolean variable is false only for
``0``, ``false`` or ``no``. A value taken from the environment is checked here, so a bad one is
refused naming the variable (never showing the value: it may be a token).
"""

from __future__ import annotations

import os

# Block key -> the variables read when the block leaves it out, first set wins.
ENV_NAMES = {
    "kubeconfig": ("K8S_AUTH_KUBECONFIG",),
    "context": ("K8S_AUTH_CONTEXT",),
    "host": ("K8S_AUTH_HOST",),
    "apiKey": ("K8S_AUTH_API_KEY",),
    "caCert": ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"),
    "clientCert": ("K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"),
    "clientKey": ("K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"),
    "validateCerts": ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"),
    "proxy": ("K8S_AUTH_PROXY",),
}
PATH_KEYS = ("kubeconfig", "caCert", "clientCert", "clientKey")
URL_KEYS = ("host", "proxy")


def check_absolute(value: str | None) -> str | None:
    if value is not None and not value.startswith("/"):
        raise ValueError("must be an absolute path")
    return value


def check_url(value: str | None) -> str | None:
    """An http(s) URL without whitespace; the message never repeats the value."""
    if value is None:
        return value
    if not value.startswith(("http://", "https://")) or len(value) < 9 or any(c.isspace() for c in value):
        raise ValueError("must be an http:// or https:// URL without whitespace")
    return value


def check_not_empty(value: str | None) -> str | None:
    if value is not None and not value:
        raise ValueError("must not be empty (leave it out instead)")
    return value


def _env_bool(raw: str) -> bool:
    return raw.strip().lower() not in ("0", "false", "no")


def _checked(key: str, variable: str, raw: str):
    """The value of ``variable`` for block key ``key``, or ValueError naming the variable."""
    if key == "validateCerts":
        return _env_bool(raw)
    try:
        if key in PATH_KEYS:
            check_absolute(raw)
        elif key in URL_KEYS:
            check_url(raw)
    except ValueError as exc:
        raise ValueError("%s (read for %s): %s" % (variable, key, exc)) from None
    return raw


def from_environment(data, environ=None):
    """``data`` (the raw block) with each connection key it leaves out taken from its variable."""
    if not isinstance(data, dict):
        return data
    environ = os.environ if environ is None else environ
    data = dict(data)
    for key, variables in ENV_NAMES.items():
        if key in data:
            continue
        for variable in variables:
            raw = environ.get(variable)
            if raw:  # kubernetes.core: an empty variable is as good as unset for strings
                data[key] = _checked(key, variable, raw)
                break
    return data


def has_credentials(block) -> bool:
    """Enough to authenticate without a kubeconfig or the in-cluster config (kubernetes.core's
    rule: host with a token, or host with a client certificate and key)."""
    return bool(block.host and (block.api_key or (block.client_cert and block.client_key)))


def overrides(block) -> dict:
    """The client ``Configuration`` attributes the block sets over what was loaded."""
    out = {}
    if block.host:
        out["host"] = block.host.rstrip("/")
    if block.api_key:
        out["api_key"] = {"authorization": "Bearer %s" % block.api_key}
    if block.validate_certs is not None:
        out["verify_ssl"] = block.validate_certs
    for attribute, value in (
        ("ssl_ca_cert", block.ca_cert),
        ("cert_file", block.client_cert),
        ("key_file", block.client_key),
        ("proxy", block.proxy),
    ):
        if value:
            out[attribute] = value
    return out
