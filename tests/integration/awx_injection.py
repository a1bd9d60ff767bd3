"""What AWX does with a credential type when a job starts, for tests: validate the inputs
against ``inputs``, then render ``injectors`` with Jinja2's immutable sandbox (as AWX does) in
a namespace of the inputs plus ``tower.filename``. Each ``file`` template is written, mode 0600,
into the job's private data directory (``env/``); ``template.<name>`` makes its path
``tower.filename.<name>`` (a bare ``template``: ``tower.filename``), then ``env`` and
``extra_vars`` are rendered with those paths.
"""

from __future__ import annotations

import json
import os
import tempfile
import types

from jinja2.sandbox import ImmutableSandboxedEnvironment

FIELD_TYPES = {"string", "boolean"}
FIELD_FORMATS = {"ssh_private_key", "url"}  # AWX's string formats (it validates the value)
KINDS = {"cloud", "net"}
INJECTOR_KEYS = {"file", "env", "extra_vars"}
# Variables AWX refuses to let a credential type set (its own job environment).
RESERVED_ENV = {"PATH", "PYTHONPATH", "VIRTUAL_ENV", "JOB_ID", "INVENTORY_ID", "AWX_HOST", "REST_API_TOKEN"}


def problems(credential_type: dict) -> list[str]:
    """What AWX's credential type validation would refuse."""
    out = []
    if credential_type.get("kind") not in KINDS:
        out.append("kind: %r is not one of %s" % (credential_type.get("kind"), sorted(KINDS)))
    fields = credential_type["inputs"]["fields"]
    ids = [f["id"] for f in fields]
    if len(set(ids)) != len(ids):
        out.append("inputs.fields: duplicate ids")
    for field in fields:
        if field.get("type", "string") not in FIELD_TYPES or not field.get("label"):
            out.append(
                "inputs.fields.%s: needs a label and a type in %s" % (field["id"], sorted(FIELD_TYPES))
            )
        if field.get("format") is not None and field["format"] not in FIELD_FORMATS:
            out.append("inputs.fields.%s: format must be one of %s" % (field["id"], sorted(FIELD_FORMATS)))
    for required in credential_type["inputs"].get("required", []):
        if required not in ids:
            out.append("inputs.required: %s is not a field" % required)
    injectors = credential_type["injectors"]
    out += ["injectors.%s: unknown" % k for k in set(injectors) - INJECTOR_KEYS]
    for label in injectors.get("file", {}):
        if label != "template" and not label.startswith("template."):
            out.append("injectors.file.%s: must be template or template.<name>" % label)
    for name in injectors.get("env", {}):
        if name in RESERVED_ENV or name.startswith("ANSIBLE_"):
            out.append("injectors.env.%s: reserved" % name)
    return out


def inject(credential_type: dict, inputs: dict, private_data_dir: str) -> tuple[dict, dict, list]:
    """(env, extra_vars, written files) of one credential of ``credential_type`` with ``inputs``."""
    fields = {f["id"] for f in credential_type["inputs"]["fields"]}
    missing = [r for r in credential_type["inputs"].get("required", []) if not inputs.get(r)]
    unknown = set(inputs) - fields
    if missing or unknown:
        raise ValueError("inputs: missing %s, unknown %s" % (missing, sorted(unknown)))
    sandbox = ImmutableSandboxedEnvironment()
    tower = types.SimpleNamespace()
    namespace = dict(inputs, tower=tower)
    env_dir = os.path.join(private_data_dir, "env")
    os.makedirs(env_dir, exist_ok=True)
    written = []
    for label, template in credential_type["injectors"].get("file", {}).items():
        fd, path = tempfile.mkstemp(dir=env_dir)
        with os.fdopen(fd, "w") as handle:
            handle.write(sandbox.from_string(template).render(**namespace))
        os.chmod(path, 0o600)
        written.append(path)
        if "." not in label:
            tower.filename = path
        else:
            if not hasattr(tower, "filename"):
                tower.filename = types.SimpleNamespace()
            setattr(tower.filename, label.split(".", 1)[1], path)
    injectors = credential_type["injectors"]
    env = {k: sandbox.from_string(v).render(**namespace) for k, v in injectors.get("env", {}).items()}
    extra_vars = {
        k: sandbox.from_string(v).render(**namespace) for k, v in injectors.get("extra_vars", {}).items()
    }
    return env, extra_vars, written


def _private_file(private_data_dir: str, content: str) -> str:
    env_dir = os.path.join(private_data_dir, "env")
    os.makedirs(env_dir, exist_ok=True)
    fd, path = tempfile.mkstemp(dir=env_dir)
    with os.fdopen(fd, "w") as handle:
        handle.write(content)
    os.chmod(path, 0o600)
    return path


def kubernetes_bearer_token(inputs: dict, private_data_dir: str) -> dict:
    """The env of AWX's built-in "OpenShift or Kubernetes API Bearer Token" credential
    (``kubernetes_bearer_token`` in awx/main/models/credential/injectors.py, a Python injector,
    not a template): the host and token always; the CA written to a file and verification on
    only when ``verify_ssl`` is ticked and a CA is given, else ``K8S_AUTH_VERIFY_SSL=False``."""
    env = {"K8S_AUTH_HOST": inputs.get("host", ""), "K8S_AUTH_API_KEY": inputs.get("bearer_token", "")}
    if inputs.get("verify_ssl") and "ssl_ca_cert" in inputs:
        env["K8S_AUTH_VERIFY_SSL"] = "True"
        env["K8S_AUTH_SSL_CA_CERT"] = _private_file(private_data_dir, inputs["ssl_ca_cert"])
    else:
        env["K8S_AUTH_VERIFY_SSL"] = "False"
    return env


def gce(inputs: dict, private_data_dir: str) -> dict:
    """The env of AWX's built-in "Google Compute Engine" credential (``gce`` in the same file):
    a service-account JSON built from the inputs (no ``private_key_id``), named by the
    variables the gcp modules and Google's application default credentials read."""
    key = {
        "type": "service_account",
        "private_key": inputs.get("ssh_key_data", ""),
        "client_email": inputs.get("username", ""),
        "project_id": inputs.get("project", ""),
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    path = _private_file(private_data_dir, json.dumps(key, indent=2))
    return {
        "GCE_EMAIL": key["client_email"],
        "GCE_PROJECT": key["project_id"],
        "GCE_CREDENTIALS_FILE_PATH": path,
        "GCP_AUTH_KIND": "serviceaccount",
        "GCP_PROJECT": key["project_id"],
        "GCP_ENV_TYPE": "tower",
        "GCP_SERVICE_ACCOUNT_FILE": path,
        "GOOGLE_APPLICATION_CREDENTIALS": path,
    }
