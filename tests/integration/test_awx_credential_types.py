"""The AWX credential types shipped in docs/awx/credential_types/: each is a valid
awx.awx.credential_type definition, and what its injector gives a job is what the modules and
playbooks read. The injection is rendered as AWX renders it (awx_injection.py); then real
``ansible-playbook`` runs use it: proxy_check with no providers option reads the injected file
through EGRESS_PROXIES_PROVIDERS_FILE, playbooks/check_providers.yml through the injected
extra variable, and Google's application default credentials find the injected key.
"""

from __future__ import annotations

import glob
import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

from . import awx_injection
from .playbook import ROOT, ansible_environ, run_playbook

pytestmark = [pytest.mark.squid, pytest.mark.playbook]

TYPES = os.path.join(ROOT, "docs", "awx", "credential_types")
# The parameters of awx.awx.credential_type that a definition file may hold.
MODULE_PARAMETERS = {"name", "description", "kind", "inputs", "injectors"}


def load(name: str) -> dict:
    with open(os.path.join(TYPES, name), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(TYPES, "*.yml"))), ids=os.path.basename)
def test_each_file_is_a_credential_type_awx_accepts(path):
    with open(path, encoding="utf-8") as handle:
        definition = yaml.safe_load(handle)
    assert set(definition) <= MODULE_PARAMETERS and {"name", "kind", "inputs", "injectors"} <= set(definition)
    assert awx_injection.problems(definition) == []
    for field in definition["inputs"]["fields"]:
        if any(word in field["id"] for word in ("key", "token", "password")):
            assert field.get("secret") is True, field["id"]  # AWX encrypts and never shows it


def test_the_providers_injection_is_what_the_modules_and_playbooks_read(tmp_path):
    state = tmp_path / "state"
    providers = {
        "installation": "awx-test",
        "providers": [{"name": "awx-local", "type": "local", "local": {"stateDir": str(state)}}],
    }
    env, extra_vars, files = awx_injection.inject(
        load("egress_proxies_providers.yml"),
        {"providers_yaml": yaml.safe_dump(providers)},
        str(tmp_path / "job"),
    )
    (path,) = files
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert env == {"EGRESS_PROXIES_PROVIDERS_FILE": path}
    assert extra_vars == {"egress_proxies_providers_file": path}

    run = run_playbook(tmp_path, [{"name": "check", "crawl.egress_proxies.proxy_check": {}}], env=env)
    assert run.rc == 0, run.stdout[-3000:]
    assert [p["name"] for p in run["check"]["providers"]] == ["awx-local"]
    assert run["check"]["ready"] is True

    vars_file = tmp_path / "extra_vars.json"
    vars_file.write_text(json.dumps(extra_vars))
    bare = {k: v for k, v in ansible_environ().items() if k != "EGRESS_PROXIES_PROVIDERS_FILE"}
    proc = subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            os.path.join(ROOT, "playbooks", "check_providers.yml"),
            "-e",
            "@%s" % vars_file,
        ],
        capture_output=True,
        text=True,
        env=bare,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "awx-local" in proc.stdout


def test_a_missing_required_input_is_refused(tmp_path):
    with pytest.raises(ValueError, match="providers_yaml"):
        awx_injection.inject(load("egress_proxies_providers.yml"), {}, str(tmp_path))


def _pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    return (
        rsa.generate_private_key(public_exponent=65537, key_size=2048)
        .private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        .decode()
    )


def _adc(env: dict) -> list:
    """(project, service account email) as Google's application default credentials find them."""
    probe = "import google.auth; c, p = google.auth.default(); print(p, c.service_account_email)"
    proc = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_the_gcp_key_injection_is_found_by_application_default_credentials(tmp_path):
    key = {
        "type": "service_account",
        "project_id": "awx-test-project",
        "private_key_id": "0" * 40,
        "private_key": _pem(),
        "client_email": "egress@awx-test-project.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
    env, _extra, (path,) = awx_injection.inject(
        load("egress_proxies_gcp_key.yml"), {"gcp_key": json.dumps(key)}, str(tmp_path / "job")
    )
    assert env == {"GOOGLE_APPLICATION_CREDENTIALS": path}
    assert _adc(env) == ["awx-test-project", key["client_email"]]


def test_the_builtin_gce_credential_is_found_by_application_default_credentials(tmp_path):
    """docs/awx.md: with AWX's built-in Google Compute Engine credential a gcp block needs no
    key path. Its injector writes a key of its own shape (no private_key_id) from the inputs."""
    inputs = {
        "username": "egress@awx-test-project.iam.gserviceaccount.com",
        "project": "awx-test-project",
        "ssh_key_data": _pem(),
    }
    env = awx_injection.gce(inputs, str(tmp_path / "job"))
    assert env["GOOGLE_APPLICATION_CREDENTIALS"] == env["GCE_CREDENTIALS_FILE_PATH"]
    assert stat.S_IMODE(os.stat(env["GOOGLE_APPLICATION_CREDENTIALS"]).st_mode) == 0o600
    assert _adc(env) == ["awx-test-project", inputs["username"]]
