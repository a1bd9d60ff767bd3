"""Output blocks of README.md and docs/ (no language) compared with what the parts really print,
taken from the Markdown at test time (issue 37 item 1): ``make demo``'s summary, the squid.conf
lines of authentication, the providers-file problems, the ``proxy`` role's failure table.

A block is compared by shape (``output_shape.py``): each line as written, with proxy names,
addresses, versions and ``...`` standing for any value, so a doc line that no longer matches what
the code prints fails here.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import xml.etree.ElementTree as ET

import jinja2
import pytest
from contract.local_backend import random_loopback_range
from integration.local_env import instance_dirs, kill_squids
from integration.playbook import ANSIBLE_PLAYBOOK, ansible_environ

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.squid_conf import (
    SquidSettings,
    render,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import metadata, xmlbuild
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import (
    provider as local_provider,
)

from . import tally
from .markdown_blocks import ROOT, all_blocks
from .output_shape import assert_lines_match, one_block


@pytest.mark.squid
@pytest.mark.playbook
def test_make_demo_prints_the_summary_the_readme_shows(tmp_path):
    """``make demo`` (``ansible-playbook playbooks/demo.yml``), with its scratch directory and
    address range moved to free ones; its summary, line by line, has the README's shape."""
    block = one_block("README.md", "gc dry run: would delete")
    demo_dir = tmp_path / "demo"
    extra = {
        "demo_dir": str(demo_dir),
        "demo_providers": [
            {
                "name": "local",
                "type": "local",
                "local": {"stateDir": str(demo_dir / "state"), "addressRange": random_loopback_range()},
            }
        ],
    }
    environ = ansible_environ(
        ANSIBLE_STDOUT_CALLBACK="task_results",
        ANSIBLE_CALLBACK_PLUGINS=os.path.join(ROOT, "tests", "integration", "callback_plugins"),
        ANSIBLE_INVENTORY_UNPARSED_WARNING="false",
    )
    try:
        proc = subprocess.run(
            [ANSIBLE_PLAYBOOK, "playbooks/demo.yml", "-e", json.dumps(extra)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=environ,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        tasks = json.loads(proc.stdout[proc.stdout.find('{"tasks": ') :])["tasks"]
        summary = tasks["Summary"]["msg"]
        assert_lines_match(block, summary)
        created = summary[0].split(": ", 1)[1].split(", ")
        shown = block.text.splitlines()[0].split(": ", 1)[1].split(", ")
        # the dry run keeps the first proxy (live uid) and would delete the second, as shown
        for names, line in ((created, summary[-1]), (shown, block.text.splitlines()[-1])):
            assert line == "gc dry run: would delete %s; kept %s (live)" % (names[1], names[0]), line
        assert instance_dirs(demo_dir / "state") == []
    finally:
        assert kill_squids(demo_dir / "state") == [], "Squid processes left behind (killed by pid)"


def test_the_auth_page_shows_the_squid_conf_lines_squid_gets():
    """docs/auth.md's lines (comments after ``#`` are the page's) are the authentication lines
    of the squid.conf the local provider writes for an instance with auth, in order."""
    block = one_block("docs/auth.md", "auth_param basic program")
    conf = render(
        SquidSettings(listen="127.0.0.1:3128", allowed=("127.0.0.0/8",), auth_file=local_provider.PASSWD)
    ).splitlines()
    first = next(i for i, line in enumerate(conf) if line.startswith("auth_param"))
    shown = [line.split("#")[0].rstrip() for line in block.text.splitlines() if line.strip()]
    assert conf[first:] == shown, "\n".join(conf[first:])


def test_the_role_failure_table_has_the_shape_playbooks_md_shows():
    """The ``proxy`` role's failure table (roles/proxy/templates/failure_table.j2, rendered as
    Ansible's template lookup renders it, blank lines dropped as the role drops them) for one
    of three proxies that timed out, as docs/playbooks.md shows it."""
    block = one_block("docs/playbooks.md", "did not converge")
    shown = block.text.splitlines()
    message = shown[-1].split("transient", 1)[1].strip()
    ok = {"failed": False, "uid": "team-a-2", "name": "proxy-aaaaaaaaaaaaaaaa", "provider": "hv"}
    late = {
        "failed": True,
        "uid": "team-a-1",
        "name": "proxy-k4r4sdxb3ggrmkqr",
        "provider": "hv",
        "state": "Provisioning",
        "error_class": "transient",
        "msg": message.replace("...", "timeout"),
    }
    variables = {
        "proxy_converged": {"results": [ok, late, dict(ok, uid="team-a-3")]},
        "proxy_list": [{"uid": "team-a-2"}, {"uid": "team-a-1"}, {"uid": "team-a-3"}],
        "proxy_state": "present",
    }
    with open(
        os.path.join(ROOT, "roles", "proxy", "templates", "failure_table.j2"), encoding="utf-8"
    ) as handle:
        template = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined).from_string(
            handle.read()
        )
    lines = [line for line in template.render(variables).split("\n") if line]
    assert_lines_match(block, lines)


def _local(**fields) -> dict:
    return {"name": "a", "type": "local", "local": fields}


def _kubernetes(**fields) -> dict:
    return {"name": "a", "type": "kubernetes", "kubernetes": fields}


_FINE = {"name": "ok", "type": "local"}
# A providers document with one problem for each line of docs/configuration.md's examples, in order.
_PROBLEMS = (
    {"providers": [{"name": "Local", "type": "local"}]},
    {"providers": [{"name": "a", "type": "lokal"}]},
    {"providers": [_FINE, {"name": "b", "type": "local"}, {"name": "c"}]},
    {"providers": [{"name": "a", "type": "local", "kubernetes": {}}]},
    {"providers": [_kubernetes(resources={"limits": {"cpu": "fast"}})]},
    {"providers": [_kubernetes(requestTimeoutSeconds=0)]},
    {"providers": [_FINE, {"name": "b", "type": "local"}, {"type": "local"}]},
    {"providers": [{"name": "a", "type": "local", "extra": 1}]},
    {"providers": [{"name": "a", "type": "local"}, {"name": "a", "type": "local"}]},
    {"providers": [_local(stateDir="relative")]},
    {"providers": [_local(state_dir="/tmp")]},
    {"providers": [_local(addressRange="10.0.0.0/8")]},
    {"providers": [_local(addressRange="127.1.0.1/16")]},
    {"providers": [_local(allowedSourceRanges=["x"])]},
    {"providers": [_local(allowedSourceRanges=[])]},
    {"providers": [{"name": "a", "type": "local", "local": []}]},
    {"providers": ["x"]},
    {"providers": [_FINE], "bogus": 1},
)


def test_configuration_md_shows_the_problems_the_parser_reports(tmp_path):
    """Each example line of "How problems are reported" is what ``providers_file`` says for a
    document with that one problem (the provider types it lists included); the last two are a
    missing file and one that is not YAML, read from the page's path."""
    block = one_block("docs/configuration.md", "bogus: unknown field")
    real = [_problems(lambda document=document: providers_file.parse(document)) for document in _PROBLEMS]
    doc_path = "/etc/egress-proxies/providers.yml"
    missing, broken = tmp_path / "missing.yml", tmp_path / "broken.yml"
    broken.write_text("providers: [\n")
    for path in (missing, broken):
        (problem,) = _problems(lambda path=path: providers_file.load_file(str(path)))
        real.append([problem.replace(str(path), doc_path)])
    assert all(len(problems) == 1 for problems in real), real
    assert_lines_match(block, [problems[0] for problems in real])


def _problems(call) -> list:
    with pytest.raises(errors.ConfigError) as raised:
        call()
    return raised.value.problems


def test_the_libvirt_metadata_block_is_what_the_provider_defines(tmp_path):
    """docs/libvirt-provider.md's ``<metadata>`` is exactly the element the kvm2 provider writes
    for the values it shows, and a domain carrying it passes libvirt's own schema
    (``virt-xml-validate``, as tests/unit/test_libvirt_xml_validate.py judges every variant)."""
    block = one_block("docs/libvirt-provider.md", "<egress:instance")
    shown = ET.fromstring(block.text)
    (mark,) = list(shown)
    namespace, element = mark.tag[1:].split("}")
    type_name = namespace.rsplit("/", 1)[1]
    created = datetime.datetime.fromisoformat(mark.get("createdAt").replace("Z", "+00:00"))
    made = ET.fromstring(
        xmlbuild.domain_xml(
            type_name=type_name,
            name="proxy-x",
            domain_type="kvm",
            vcpus=1,
            memory_mib=512,
            firmware="bios",
            overlay_path="/var/lib/libvirt/images/proxy-x.kvm2.qcow2",
            seed_path="/var/lib/libvirt/images/proxy-x.kvm2.seed.iso",
            bridge="",
            uid=mark.get("uid"),
            created_at=created,
            installation=mark.get("installation"),
            provider=mark.get("provider"),
            port=int(mark.get("port")),
        )
    )
    (made_mark,) = list(made.find("metadata"))
    assert (made_mark.tag, made_mark.attrib) == (mark.tag, mark.attrib), ET.tostring(
        made_mark, encoding="unicode"
    )
    assert (namespace, element) == (metadata.namespace("kvm2"), metadata.ELEMENT)
    assert metadata.namespace("kvm").endswith("/libvirt/kvm")  # as the page says of the kvm type
    made.remove(made.find("metadata"))
    made.insert(4, shown)  # the page's own element, where libvirt wants it
    path = tmp_path / "domain.xml"
    path.write_text(ET.tostring(made, encoding="unicode"))
    proc = subprocess.run(
        ["/usr/bin/virt-xml-validate", str(path), "domain"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# Output and diagram blocks another branch of issue 37 is making checked (merged by hand): each
# must still be unchecked here, so the entry goes when that work arrives.
_ELSEWHERE = {
    ("README.md", "galaxy.yml meta/"): "i37-run-a: README's layout",
    ("docs/architecture.md", "informer → workqueue"): "i38-bench: the architecture picture",
}


def test_every_output_or_diagram_block_is_compared_or_says_why_not():
    """A new output, tree or diagram block (no language) must be compared by a test
    (classify.COMPARED_BY) or carry a skip marker with the true reason."""
    silent = []
    for block in all_blocks():
        outcome, why = tally.outcome(block)
        if outcome != "not checked" or block.marker == "skip":
            continue
        if not any(block.path == path and needle in block.text for path, needle in _ELSEWHERE):
            silent.append("%s (%s)" % (block.where, why))
    assert silent == [], "output or diagram blocks neither compared nor marked: %s" % silent
    for (path, needle), who in _ELSEWHERE.items():
        found = [b for b in all_blocks() if b.path == path and needle in b.text]
        assert found and all(tally.outcome(b)[0] == "not checked" for b in found), (
            "%s: %s is checked now; remove its _ELSEWHERE entry" % (path, who)
        )
