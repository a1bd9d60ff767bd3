"""The user-data the gcp, kvm and kvm2 providers give a guest, processed by cloud-init's own code
(``tests/cloud_init_run.py`` under Debian's python3: its part handlers, the ``runcmd`` module and
``scripts_user``, nothing executed), for every kind of ``cloud_init`` the docs accept, with and
without auth. With auth, the collection's include-and-restart must run after every command and
script of the request's (which install Squid): with a ``#!`` script it ran first (``runcmd``
sorts before ``user-data``), so the proxy served without credentials (issue 40 §5)."""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import cloud_init_auth, proxy_auth
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import insert
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import create

SYSTEM_PYTHON = "/usr/bin/python3"
HARNESS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cloud_init_run.py")
AUTH = proxy_auth.Auth("crawler", "s3cret-pw")
INCLUDE = "include /etc/squid-egress-auth/auth.conf"


def _mime(*parts) -> str:
    """A user's MIME multipart document of (type, file name or None, text) parts."""
    out = ['Content-Type: multipart/mixed; boundary="user-b"\nMIME-Version: 1.0\n\n']
    for ctype, name, text in parts:
        out.append("--user-b\nContent-Type: %s\nMIME-Version: 1.0\n" % ctype)
        if name:
            out.append('Content-Disposition: attachment; filename="%s"\n' % name)
        out.append("\n%s\n" % text)
    out.append("--user-b--\n")
    return "".join(out)


def _gzip_part(text: str) -> str:
    return (
        "--user-b\nContent-Type: application/x-gzip\nContent-Transfer-Encoding: base64\n"
        'Content-Disposition: attachment; filename="packed.gz"\n\n%s\n'
    ) % base64.b64encode(gzip.compress(text.encode())).decode()


CLOUD_CONFIG = (
    "#cloud-config\npackages: [squid]\n"
    "write_files:\n  - {path: /etc/squid/conf.d/user.conf, content: 'acl u src 10.0.0.0/8'}\n"
    "runcmd:\n  - [sh, -c, 'echo USER-RUNCMD-1']\n  - echo USER-RUNCMD-2\n"
)
SCRIPT = "#!/bin/sh\necho USER-SCRIPT\napt-get install -y squid\n"
BOOTHOOK = "#cloud-boothook\n#!/bin/sh\necho USER-BOOTHOOK\n"
MULTIPART = _mime(
    ("text/cloud-config", "config.yaml", CLOUD_CONFIG),
    ("text/x-shellscript", "install.sh", "#!/bin/sh\necho USER-INSTALL\n"),
    ("text/x-shellscript", "zzzz-last.sh", "#!/bin/sh\necho USER-ZZZZ\n"),
    ("text/x-shellscript", None, "#!/bin/sh\necho USER-UNNAMED\n"),
    ("text/plain", "sniffed", "#!/bin/sh\necho USER-SNIFFED\n"),
    ("text/x-shellscript-per-boot", "every-boot.sh", "#!/bin/sh\necho USER-PER-BOOT\n"),
)
# Every kind docs/auth.md, gcp-provider.md and libvirt-provider.md accept with auth, and the user
# markers each puts where scripts_user runs them.
ACCEPTED = {
    "cloud-config": (CLOUD_CONFIG, ["USER-RUNCMD-1", "USER-RUNCMD-2"]),
    "script": (SCRIPT, ["USER-SCRIPT"]),
    "boothook": (BOOTHOOK, []),
    "multipart": (MULTIPART, ["USER-RUNCMD-1", "USER-INSTALL", "USER-ZZZZ", "USER-UNNAMED", "USER-SNIFFED"]),
    "multipart of ours": (
        cloud_init_auth.with_auth(SCRIPT, proxy_auth.Auth("old", "pw").passwd_line()),
        ["USER-SCRIPT"],
    ),
}
# What cloud-init reads but the collection cannot order its step after (or add it beside).
REFUSED = {
    "empty": ("", "cloud_init: required with auth"),
    "include": ("#include\nfile:///nonexistent\n", "cloud_init: with auth it must be"),
    "jinja": ("## template: jinja\n#cloud-config\nruncmd: [echo x]\n", "cloud_init: with auth it must be"),
    "cloud-config-archive": (
        "#cloud-config-archive\n- {type: text/x-shellscript, content: x}\n",
        "with auth it must be",
    ),
    "part-handler": ("#part-handler\ndef list_types(): return []\n", "with auth it must be"),
    "multipart with an include part": (
        _mime(("text/cloud-config", "c", CLOUD_CONFIG), ("text/x-include-url", "i", "file:///nonexistent")),
        "MIME part 1 (text/x-include-url)",
    ),
    "multipart with a sniffed include": (
        _mime(
            ("text/plain", "p", "#include file:///nonexistent"),
        ),
        "MIME part 0 (text/plain)",
    ),
    "multipart with an archive": (
        _mime(
            ("text/cloud-config-archive", "a", "- {content: x}"),
        ),
        "MIME part 0 (text/cloud-config-archive)",
    ),
    "multipart with gzip": (
        _mime(("text/cloud-config", "c", CLOUD_CONFIG)).replace(
            "--user-b--\n", _gzip_part(SCRIPT) + "--user-b--\n"
        ),
        "MIME part 1 (application/x-gzip)",
    ),
}


def _request(cloud_init: str, auth) -> contract.CreateRequest:
    return contract.CreateRequest(name="proxy-aaaaaaaaaaaaaaaa", uid="u-1", cloud_init=cloud_init, auth=auth)


# The user-data each provider builds for a request (gcp's metadata item, kvm/kvm2's seed).
PROVIDERS = {
    "gcp": insert.user_data,
    "kvm, kvm2": lambda req: create.user_data(req)[0],
}


def cloud_init_run(user_data: str, tmp_path) -> dict:
    """What cloud-init makes of ``user_data``, by its own code under Debian's python3."""
    assert os.access(SYSTEM_PYTHON, os.X_OK)
    path = tmp_path / "user-data"
    path.write_text(user_data)
    scratch = tmp_path / "guest"
    scratch.mkdir()
    out = subprocess.run(
        [SYSTEM_PYTHON, HARNESS, str(path), str(scratch)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    assert out.returncode == 0, (
        "cloud-init (hack/bootstrap.sh test installs it) failed:\n" + out.stderr[-3000:]
    )
    return json.loads(out.stdout)


def _position(order: list, scripts: dict, marker: str, last: bool = False) -> tuple:
    """Where ``marker`` runs (its first or last time): (index of its script in scripts_user's
    order, line in it)."""
    found = [
        (index, number)
        for index, name in enumerate(order)
        for number, line in enumerate(scripts[name].splitlines())
        if marker in line
    ]
    assert found, "%s never runs: %s" % (marker, order)
    return found[-1] if last else found[0]


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("kind", sorted(ACCEPTED))
def test_with_auth_the_include_runs_after_every_user_command(kind, provider, tmp_path):
    cloud_init, markers = ACCEPTED[kind]
    assert cloud_init_auth.problem(cloud_init) == ""
    run = cloud_init_run(PROVIDERS[provider](_request(cloud_init, AUTH)), tmp_path)
    assert run["warnings"] == []
    order, scripts = run["scripts_user_order"], run["scripts"]
    ours = _position(order, scripts, INCLUDE, last=True)
    assert ours[0] == len(order) - 1, "the include is not in the last script scripts_user runs: %s" % order
    for marker in markers:
        assert _position(order, scripts, marker) < ours, "%s runs after the include: %s" % (marker, order)
    assert "systemctl restart squid" in scripts[order[ours[0]]].split(INCLUDE, 1)[1]
    files = {item["path"]: item for item in run["cloud_config"]["write_files"]}
    assert AUTH.matches(files[cloud_init_auth.PASSWD]["content"])
    assert files[cloud_init_auth.PASSWD]["permissions"] == "0600"
    assert cloud_init_auth.SNIPPET in files
    if kind in ("cloud-config", "multipart"):
        assert "/etc/squid/conf.d/user.conf" in files  # the user's write_files kept beside ours
        assert run["cloud_config"]["packages"] == ["squid"]
    if kind == "boothook":
        assert run["boothooks_run"], "the user's boothook is consumed as one"
    if kind == "multipart":
        assert run["per_frequency_scripts"]["per-boot"] == ["every-boot.sh"]
        stage = [name for name, _ran in run["final_stage"]]
        assert stage.index("scripts_per_boot") < stage.index("scripts_user") == len(stage) - 1
        assert dict(run["final_stage"])["scripts_per_boot"] == ["every-boot.sh"]  # before scripts_user


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("kind", sorted(set(ACCEPTED) - {"multipart of ours"}) + sorted(REFUSED))
def test_without_auth_the_guest_gets_the_cloud_init_unchanged(kind, provider, tmp_path):
    """Every kind cloud-init reads is handed over as it is, and nothing of the collection's runs;
    an include (here of a local file: no network) is followed by cloud-init."""
    included = tmp_path / "included"
    included.write_text("#!/bin/sh\necho USER-INCLUDED\n")
    cloud_init = (ACCEPTED.get(kind) or REFUSED[kind])[0].replace(
        "file:///nonexistent", "file://%s" % included
    )
    user_data = PROVIDERS[provider](_request(cloud_init, None))
    assert user_data == cloud_init
    run = cloud_init_run(user_data, tmp_path)
    assert not any(INCLUDE in text for text in run["scripts"].values())
    if "include" in kind:
        assert any("USER-INCLUDED" in text for text in run["scripts"].values()), run["scripts"]


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_what_cannot_be_ordered_is_refused_naming_the_field(kind):
    cloud_init, fragment = REFUSED[kind]
    assert fragment in cloud_init_auth.problem(cloud_init)
    assert cloud_init_auth.problem(cloud_init).startswith("cloud_init: ")


def test_the_script_name_sorts_after_any_cleaned_name():
    names = ["zzzz-last.sh", "z/z/z", "runcmd", "Z~Z", "user-data"]
    name = cloud_init_auth.script_name(names)
    cleaned = ["".join(ch for ch in n.replace("/", "_") if ch.isalnum() or ch in "_-.()") for n in names]
    assert sorted([*cleaned, name])[-1] == name
    assert name.startswith("z" * 5)


def test_the_harness_sees_the_order_cloud_init_gives(tmp_path):
    """Guards the test above: the harness does report a runcmd that runs before a script."""
    user_data = _mime(
        ("text/x-shellscript", "user-data", "#!/bin/sh\necho FIRST\n"),
        ("text/cloud-config", "c", "#cloud-config\nruncmd: [echo RUNCMD]\n"),
    )
    run = cloud_init_run(user_data, tmp_path)
    assert run["scripts_user_order"] == ["runcmd", "user-data"]
    assert sys.version_info  # the project's python runs the test; cloud-init's runs the harness
