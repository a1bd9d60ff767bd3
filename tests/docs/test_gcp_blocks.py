"""docs/gcp-provider.md's providers files, health check and sample playbook, taken from the
Markdown at test time and run against the local fake of the Compute Engine API (tests/fakes/gcp)
with the real google-cloud-compute client.

The rewrites, as for any test endpoint: ``/etc/egress-proxies`` is a scratch directory, and
each providers file's gcp block gets ``apiEndpoint`` (the field the page documents for tests
and private endpoints) set to the fake's address. The runbook's service-account key is what
its ``gcloud iam service-accounts keys create`` step makes: a new RSA key of the account that
step names, whose public half the fake's API front trusts, so every call is signed with it.
The ``gcloud`` commands themselves need Google Cloud and are marked check-only in the page.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid

import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fakes.gcp import FakeCompute
from fakes.gcp.model import Timing
from integration.playbook import ansible_environ, run_playbook

from .markdown_blocks import ROOT, blocks

pytestmark = [pytest.mark.playbook]

PAGE = "docs/gcp-provider.md"
ETC = "/etc/egress-proxies"
FAST = Timing(provisioning=0.3, staging=0.3, operation=0.4, deletion=0.3)
PI = "crawl.egress_proxies.proxy_instance"


def one_block(needle: str):
    found = [b for b in blocks(PAGE) if needle in b.text]
    assert len(found) == 1, "%s: %d blocks contain %r" % (PAGE, len(found), needle)
    return found[0]


def with_endpoint(providers: dict, endpoint: str) -> dict:
    for provider in providers["providers"]:
        assert provider["type"] == "gcp" and not provider["gcp"].get("apiEndpoint")
        provider["gcp"]["apiEndpoint"] = endpoint
    return providers


def service_account_key(fake: FakeCompute, path, email: str, project: str) -> None:
    """A service-account key file as ``gcloud iam service-accounts keys create`` writes it (0600),
    its public key registered with the fake's API front."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    fake.token.add_service_account(email, public)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    document = {
        "type": "service_account",
        "project_id": project,
        "private_key_id": uuid.uuid4().hex,
        "private_key": private.decode("ascii"),
        "client_email": email,
        "client_id": "100000000000000000001",
        "token_uri": fake.token_uri,
    }
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(document, handle)


def test_the_configuration_block_passes_the_health_check(tmp_path):
    """The "Configuration" block, every field at its documented default, is ready."""
    providers = yaml.safe_load(one_block("installation: prod-eu").text)
    project = providers["providers"][0]["gcp"]["project"]
    fake = FakeCompute(project, timing=FAST).start()
    try:
        with_endpoint(providers, fake.endpoint)
        check = {"name": "check", "crawl.egress_proxies.proxy_check": dict(providers)}
        run = run_playbook(tmp_path, [check])
    finally:
        fake.stop()
    assert run.rc == 0, run.stdout[-3000:]
    (provider,) = run["check"]["providers"]
    (target,) = provider["targets"]
    assert (provider["name"], target["ready"], target["reason"]) == ("gcp-eu", True, "Reachable"), provider
    assert fake.response_problems == []


def test_the_runbook_checks_creates_finds_and_deletes_its_proxy(tmp_path):
    """Steps 2 to 5 and 9 of "Validating against a real project", and "A sample that works": the
    key of step 2, the providers file of step 3, step 4's health command (ready, Reachable,
    quota headroom for the region), the sample playbook (Running, its firewall rule from the
    file's source range, the three labels step 5 filters on), then ``state: absent``."""
    etc = tmp_path / "etc"
    etc.mkdir()
    providers = yaml.safe_load(one_block("installation: runbook").text.replace(ETC, str(etc)))
    (gcp,) = [p["gcp"] for p in providers["providers"]]
    fake = FakeCompute(gcp["project"], timing=FAST).start()
    try:
        key_step = one_block("gcloud iam service-accounts keys create").text
        email = re.search(r"--iam-account (\S+)", key_step).group(1)
        key_path = re.search(r"keys create (\S+)", key_step).group(1).replace(ETC, str(etc))
        assert key_path == gcp["credentialsFile"]
        service_account_key(fake, key_path, email, gcp["project"])
        providers_file = etc / "providers.yaml"
        providers_file.write_text(yaml.safe_dump(with_endpoint(providers, fake.endpoint)))

        with open(os.path.join(ROOT, PAGE), encoding="utf-8") as handle:
            page = handle.read()
        step4 = re.search(r"`(ansible localhost -m crawl\.egress_proxies\.proxy_check -a\s+\S+)`", page)
        health = _adhoc(re.sub(r"\s+", " ", step4.group(1)).replace(ETC, str(etc)))
        (target,) = health["providers"][0]["targets"]
        assert (target["ready"], target["reason"]) == (True, "Reachable"), target
        quota = target["details"]["quota"]
        assert sorted(quota) == gcp["regions"] and all(
            quota[r]["INSTANCES"]["headroom"] > 0 for r in quota
        ), target

        sample = one_block("- name: One egress proxy on Compute Engine")
        playbook = tmp_path / "sample.yml"
        playbook.write_text(sample.text.replace(ETC, str(etc)))
        proc = subprocess.run(
            [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(playbook)],
            capture_output=True,
            text=True,
            env=ansible_environ(ANSIBLE_INVENTORY_UNPARSED_WARNING="false"),
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        (insert,) = fake.log("POST", "/instances")
        signed = next(v for k, v in insert.headers.items() if k.lower() == "authorization")
        assert fake.token.accepts(signed)  # signed with step 2's key, not anonymous
        labels = insert.body["labels"]
        assert labels["proxy-operator-managed"] == "true"  # step 5's filter
        assert labels["proxy-operator-install"] == providers["installation"]  # step 9's filter
        assert re.search(r'"msg": "127\.[\d.]+:3128 \(Running\)"', proc.stdout), proc.stdout[-2000:]
        (rule,) = fake.log("POST", "/firewalls")
        assert rule.body["sourceRanges"] == gcp["firewallSourceRanges"]

        item = yaml.safe_load(playbook.read_text())[0]["tasks"][0][PI]
        gone = dict(item, state="absent")
        run = run_playbook(tmp_path, [{"name": "absent", PI: gone}])
        assert run.rc == 0 and run["absent"]["changed"], run.stdout[-3000:]
        assert fake.state.instances == {}
    finally:
        fake.stop()
    assert fake.response_problems == []


def _adhoc(command: str) -> dict:
    """Run an ``ansible localhost -m ...`` command; returns the module's result."""
    proc = subprocess.run(
        command,
        shell=True,
        capture_output=True,
        text=True,
        env=ansible_environ(
            PATH="%s:%s" % (os.path.dirname(sys.executable), os.environ["PATH"]),
            ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
        ),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return json.loads(proc.stdout[proc.stdout.index("{") :])
