"""The user-data a gcp VM gets with auth (cloud_init_auth): the user's cloud-init kept as it is,
the collection's cloud-config part (the password's hash only) and script part beside it, parsed
back the way cloud-init reads a MIME document; what cannot take the parts is refused naming the
field. The order cloud-init runs them in: test_cloud_init_order.py."""

from __future__ import annotations

import email
import email.policy
import json
import subprocess

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import cloud_init_auth, proxy_auth

AUTH = proxy_auth.Auth("crawler", "s3cret:pass word")
USER = "#cloud-config\npackages: [squid]\nruncmd:\n  - [systemctl, restart, squid]\n"


def parts(user_data: str) -> list:
    message = email.message_from_string(user_data, policy=email.policy.compat32)
    assert message.is_multipart()
    return [
        (p.get_content_type(), p.get_filename(), p.get_payload())
        for p in message.walk()
        if not p.is_multipart()
    ]


def ours(user_data: str) -> dict:
    (text,) = [payload for _t, name, payload in parts(user_data) if name == cloud_init_auth.PART_NAME]
    assert text.startswith("#cloud-config\n")
    return json.loads(text.split("\n", 1)[1])


def test_the_users_part_is_kept_and_ours_holds_the_hash_only():
    data = cloud_init_auth.with_auth(USER, AUTH.passwd_line())
    assert AUTH.password not in data and "s3cret" not in data
    (user, mine, script) = parts(data)
    assert user == ("text/cloud-config", "user-data", USER)
    assert mine[:2] == ("text/cloud-config", cloud_init_auth.PART_NAME)
    assert script[:2] == ("text/x-shellscript", "z-egress-proxies-auth")
    doc = ours(data)
    assert doc["merge_how"] == "dict(recurse_array,no_replace)+list(append)"  # appended, never replacing
    passwd, conf = doc["write_files"]
    assert (passwd["path"], passwd["owner"], passwd["permissions"]) == (
        "/etc/squid-egress-auth/passwd",
        "proxy:proxy",
        "0600",
    )
    assert passwd["content"].startswith("crawler:$6$") and AUTH.matches(passwd["content"])
    assert "http_access deny !egress_authenticated" in conf["content"]
    assert "/usr/lib/squid/basic_ncsa_auth /etc/squid-egress-auth/passwd" in conf["content"]
    assert "runcmd" not in doc  # runcmd's script sorts before a script part named user-data
    assert script[2].startswith("#!/bin/sh\n") and cloud_init_auth.include_command() in script[2]
    assert cloud_init_auth.passwd_of(data) == passwd["content"]
    assert cloud_init_auth.passwd_of(USER) == ""  # made without auth


def test_a_shell_script_and_a_mime_document_keep_every_part():
    script = "#!/bin/sh\napt-get install -y squid\n"
    data = cloud_init_auth.with_auth(script, AUTH.passwd_line())
    assert [(t, n) for t, n, _p in parts(data)] == [
        ("text/x-shellscript", "user-data"),
        ("text/cloud-config", cloud_init_auth.PART_NAME),
        ("text/x-shellscript", "z-egress-proxies-auth"),
    ]
    assert parts(data)[0][2] == script
    mime = cloud_init_auth.with_auth(USER, proxy_auth.Auth("a", "b").passwd_line())
    again = cloud_init_auth.with_auth(mime, AUTH.passwd_line())
    names = [n for _t, n, _p in parts(again)]
    assert names == [
        "user-data",
        cloud_init_auth.PART_NAME,
        "z-egress-proxies-auth",
        cloud_init_auth.PART_NAME,
        "zz-egress-proxies-auth",  # after the first one's script too
    ]
    assert parts(again)[0][2] == USER


@pytest.mark.parametrize(
    "cloud_init,fragment",
    [
        ("", "cloud_init: required with auth on this provider"),
        ("packages: [squid]\n", "cloud_init: with auth it must be a cloud-config"),
        ("#include\nhttp://127.0.0.1/x\n", "cloud_init: with auth it must be a cloud-config"),
        ("#cloud-config-archive\n- {content: x}\n", "cloud_init: with auth it must be a cloud-config"),
    ],
)
def test_what_cannot_take_the_part_is_refused_naming_the_field(cloud_init, fragment):
    assert fragment in cloud_init_auth.problem(cloud_init)


def test_the_include_goes_on_the_first_line_once(tmp_path):
    conf = tmp_path / "squid.conf"
    conf.write_text("acl clients src 10.0.0.0/8\nhttp_access allow clients\nhttp_access deny all\n")
    command = cloud_init_auth.include_command(str(conf), "/etc/squid-egress-auth/auth.conf", restart="true")
    for _run in range(2):  # a second run of the script adds nothing
        subprocess.run(["sh", "-c", command], check=True)
    lines = conf.read_text().splitlines()
    assert lines[0] == "include /etc/squid-egress-auth/auth.conf"
    assert lines.count(lines[0]) == 1 and lines[1:] == [
        "acl clients src 10.0.0.0/8",
        "http_access allow clients",
        "http_access deny all",
    ]
