"""Output blocks of README.md and docs/ (no language) compared with what the parts really print,
taken from the Markdown at test time (issue 37 item 1): the squid.conf lines of authentication,
the ``proxy`` role's failure table, the libvirt metadata element (``make demo``'s summary is
test_readme_demo.py's, the providers-file problems test_config_messages.py's).

A block is compared by shape (``output_shape.py``): each line as written, with proxy names,
addresses, versions and ``...`` standing for any value, so a doc line that no longer matches what
the code prints fails here.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import xml.etree.ElementTree as ET

import jinja2

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


def test_every_output_or_diagram_block_is_compared_or_says_why_not():
    """A new output, tree or diagram block (no language) must be compared by a test
    (classify.COMPARED_BY) or carry a skip marker with the true reason."""
    silent = []
    for block in all_blocks():
        outcome, why = tally.outcome(block)
        if outcome != "not checked" or block.marker == "skip":
            continue
        silent.append("%s (%s)" % (block.where, why))
    assert silent == [], "output or diagram blocks neither compared nor marked: %s" % silent
