"""Every domain and volume XML the kvm and kvm2 providers give libvirt, for every variant the
builders produce (type name x domain type x firmware x bridge x auth marks; raw volumes, and
overlays on each base format), judged by libvirt's own schemas with ``virt-xml-validate``
(Debian's libvirt-clients, with xmllint from libxml2-utils; hack/bootstrap.sh installs both)."""

from __future__ import annotations

import datetime
import itertools
import shutil
import subprocess

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import config, xmlbuild

VALIDATE = "/usr/bin/virt-xml-validate"
WHEN = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
TYPE_NAMES = ("kvm", "kvm2")
BRIDGES = ("", "br-egress0")
PASSWDS = ("", "crawler:$6$salt$" + "h" * 86 + "\n")
# Paths with the characters an attribute must escape: the XML stays valid, the values inside.
OVERLAY = "/var/lib/libvirt/images/proxy-a'\"<&>-kvm.qcow2"
SEED = "/var/lib/libvirt/images/proxy-a-seed.iso"


def _domain(type_name, domain_type, firmware, bridge, passwd) -> str:
    return xmlbuild.domain_xml(
        type_name=type_name,
        name="proxy-aaaaaaaaaaaaaaaa",
        domain_type=domain_type,
        vcpus=2,
        memory_mib=1024,
        firmware=firmware,
        overlay_path=OVERLAY,
        seed_path=SEED,
        bridge=bridge,
        uid="u-1",
        created_at=WHEN,
        installation="inst",
        passwd=passwd,
        provider="hv1",
        port=3128,
    )


DOMAINS = {
    "domain %s %s %s bridge=%s auth=%s" % (t, d, f, bool(b), bool(p)): (_domain(t, d, f, b, p), "domain")
    for t, d, f, b, p in itertools.product(
        TYPE_NAMES, config.DOMAIN_TYPES, config.FIRMWARES, BRIDGES, PASSWDS
    )
}
VOLUMES = {
    "raw volume": (xmlbuild.raw_volume_xml("proxy-a-seed.iso", 374784), "storagevol"),
    **{
        "overlay on a %s base" % fmt: (
            xmlbuild.overlay_volume_xml("proxy-a.qcow2", 10, "/var/lib/libvirt/images/base-1", fmt),
            "storagevol",
        )
        for fmt in config.FORMATS
    },
}
VARIANTS = {**DOMAINS, **VOLUMES}


def validate(xml: str, schema: str, tmp_path) -> subprocess.CompletedProcess:
    assert shutil.which("xmllint"), "xmllint (libxml2-utils) is installed by hack/bootstrap.sh test"
    path = tmp_path / "doc.xml"
    path.write_text(xml)
    return subprocess.run(
        [VALIDATE, str(path), schema], capture_output=True, text=True, timeout=120, check=False
    )


def test_every_variant_is_counted():
    """35 today: 32 domains and 3 volumes. A new value in config's choices adds its variants."""
    assert len(DOMAINS) == len(TYPE_NAMES) * len(config.DOMAIN_TYPES) * len(config.FIRMWARES) * 4
    assert len(VARIANTS) == len(DOMAINS) + 1 + len(config.FORMATS) >= 35


@pytest.mark.parametrize("label", sorted(VARIANTS))
def test_libvirt_schema_accepts_the_generated_xml(label, tmp_path):
    xml, schema = VARIANTS[label]
    out = validate(xml, schema, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "validates" in out.stdout + out.stderr


@pytest.mark.parametrize(
    ("xml", "schema"),
    [
        (VARIANTS["raw volume"][0].replace("<capacity", "<capacitty"), "storagevol"),
        (DOMAINS[sorted(DOMAINS)[0]][0].replace('bus="virtio"', 'bus="no-such-bus"'), "domain"),
    ],
    ids=["volume", "domain"],
)
def test_the_validator_does_refuse_a_broken_document(xml, schema, tmp_path):
    """Guards the table: libvirt's schema is really applied."""
    assert validate(xml, schema, tmp_path).returncode != 0
