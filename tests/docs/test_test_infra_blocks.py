"""Output blocks about KVM trouble and the test machinery (issue 37 item 1), compared with the
code that prints or builds them, since the real thing needs a host whose KVM fails (not this
one, by design) or root network namespaces: the libvirt provider's hint on a KVM start failure,
the test hypervisor's choice line, the real-guest network's addresses and the version matrix's
summary (printed by hack/matrix.sh's own ``summary`` function from cell results).
"""

from __future__ import annotations

import inspect
import ipaddress
import os
import re
import subprocess

from contract import hypervisor_probe
from guest import network

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import (
    backend,
    domain_type,
)

from .markdown_blocks import ROOT
from .output_shape import assert_lines_match, one_block, shape

_HINT = "; the host's KVM cannot start this guest"


def test_the_kvm_start_failure_gets_the_hint_the_libvirt_page_shows():
    """QEMU's error as the page shows it, raised by a libvirt call on a ``kvm`` host, comes back
    from the provider with the page's hint after it."""
    block = one_block("docs/libvirt-provider.md", _HINT)
    qemu = block.text[: block.text.index(_HINT)]
    hinted = domain_type.with_hint(backend.LibvirtCallError(1, qemu), "kvm")
    assert_lines_match(block, str(hinted).splitlines())
    assert str(domain_type.with_hint(backend.LibvirtCallError(1, qemu), "qemu")) == qemu  # TCG: no hint


def test_the_test_hypervisor_line_of_testing_md_is_the_probe_s():
    """docs/testing.md's line is the probe's ``Choice.line`` for a ``boot``-level fallback to
    TCG, with the reason the probe gives when a KVM guest did not start (here the libvirt page's
    own start failure)."""
    block = one_block("docs/testing.md", "test hypervisor: domainType")
    source = inspect.getsource(hypervisor_probe._probe)
    prefix = re.search(r'Choice\("qemu", "([^"%]+)%s"', source).group(1)
    failure = one_block("docs/libvirt-provider.md", _HINT).text.splitlines()[0]
    line = hypervisor_probe.Choice("qemu", prefix + failure + " / ...", "boot").line
    assert shape(block.text.strip()).match(line), (block.text, line)


def test_the_guest_network_picture_has_the_addresses_network_py_sets_up():
    """Every address of docs/testing.md's picture is one tests/guest/network.py configures, with
    the same prefix length, and the DHCP range and lease time are udhcpd's."""
    block = one_block("docs/testing.md", "root namespace")
    made = {
        network.GATEWAY + "/24",
        network.TRANSIT_ROOT + "/30",
        network.TRANSIT_NS + "/30",
        network.SUBNET + ".0/24",
        network.TRANSIT_NS,
    }
    shown = set(re.findall(r"\d+\.\d+\.\d+\.\d+(?:/\d+)?", block.text))
    assert shown == made, sorted(shown ^ made)
    for address in shown:
        ipaddress.ip_interface(address)
    first, last, lease = re.search(r"udhcpd \(\.(\d+)-\.(\d+), (\d+) s leases\)", block.text).groups()
    assert (network.SUBNET + "." + first, network.SUBNET + "." + last) == network.DHCP_RANGE
    assert "option lease %s\\n" % lease in inspect.getsource(network)


def test_the_version_matrix_summary_is_what_hack_matrix_sh_prints(tmp_path):
    """hack/matrix.sh's ``summary`` (the function itself, taken from the script) over cell
    results in cell.sh's format: the first cell passed as the page shows, the cells the page
    elides passed, the last one NOT-RUN with the page's reason."""
    block = one_block("docs/testing.md", "==> version matrix (")
    rows = [line.split(None, 4) for line in block.text.splitlines() if re.match(r"    \d+\.\d+ ", line)]
    first, last = rows[0], rows[-1]
    out = tmp_path / "tests" / "output" / "matrix"
    out.mkdir(parents=True)
    cells = _cells()
    for cell in cells:
        row = (
            first
            if cell == first[0]
            else last
            if cell == last[0]
            else [cell, cell + ".1", "3.11.2", *first[3:]]
        )
        (out / ("%s.result" % cell)).write_text(" ".join(row) + "\n")
    script = (
        'root=%s; out=%s; . "%s/tests/matrix/versions.env"; cells=$MATRIX_CELLS\n' % (tmp_path, out, ROOT)
        + _function(os.path.join(ROOT, "hack", "matrix.sh"), "summary")
        + "summary\n"
    )
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # a NOT-RUN cell is not passed
    assert_lines_match(block, proc.stdout.splitlines())


def _cells() -> list:
    with open(os.path.join(ROOT, "tests", "matrix", "versions.env"), encoding="utf-8") as handle:
        return re.search(r'^MATRIX_CELLS="([^"]+)"', handle.read(), re.M).group(1).split()


def _function(path: str, name: str) -> str:
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    return re.search(r"^%s\(\) \{\n.*?^\}\n" % name, text, re.M | re.S).group(0)


# The controller picture's boxes that are one module each, by the word the picture uses.
_BOXES = ("informer", "work queue", "reconcile", "reconciler", "batcher", "executor", "Events")


def test_every_box_of_the_controller_picture_is_code_the_page_names():
    """docs/controller.md's picture: each box above is a module of the controller package whose
    file the page's "Code:" list names (``work queue``: ``kube/workqueue.py``), the two modules
    it runs are the collection's, and every path of that list exists."""
    block = one_block("docs/controller.md", "informer (cache)")
    package = os.path.join(ROOT, "controller", "egress_proxies_controller")
    with open(os.path.join(ROOT, "docs", "controller.md"), encoding="utf-8") as handle:
        page = handle.read()
    listed = re.findall(
        r"`([\w/]+\.py)`", page[page.index("Code: `controller/egress_proxies_controller/`") :][:2500]
    )
    missing = [path for path in listed if not os.path.isfile(os.path.join(package, path))]
    assert listed and not missing, "the page names files that do not exist: %s" % missing
    stems = {os.path.splitext(os.path.basename(path))[0]: path for path in listed}
    for box in _BOXES:
        assert box in block.text, "%s: no %r box any more: update _BOXES" % (block.where, box)
        assert box.replace(" ", "").lower() in stems, "%s: %r is in no file of the Code: list" % (
            block.where,
            box,
        )
    for module in re.findall(r"\bproxy_\w+", block.text):
        assert os.path.isfile(os.path.join(ROOT, "plugins", "modules", module + ".py")), module
