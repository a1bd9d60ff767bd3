"""The squid.conf the kubernetes provider ships in its ConfigMap, checked by the real Squid
(``squid -k parse``) for several configurations; and proof that the check can fail."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import contract
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import pod as podlib
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes.config import (
    KubernetesConfig,
)

pytestmark = pytest.mark.squid

SQUID = shutil.which("squid") or shutil.which("squid", path="/usr/sbin:/usr/local/sbin")


def squid_parse(conf_text: str, tmp_path) -> subprocess.CompletedProcess:
    assert SQUID, "squid is not installed (make test installs it through hack/bootstrap.sh)"
    path = tmp_path / "squid.conf"
    path.write_text(conf_text)
    return subprocess.run(
        [SQUID, "-k", "parse", "-f", str(path)], capture_output=True, text=True, timeout=60, check=False
    )


def problems(out: subprocess.CompletedProcess) -> list:
    text = out.stdout + out.stderr
    return [line for line in text.splitlines() if "ERROR" in line or "FATAL" in line or "Bungled" in line]


CONFIGS = [
    ("defaults", {}, 3128),
    ("one range", {"allowedSourceRanges": ["100.64.0.0/10"]}, 3128),
    ("ipv6 and host bits", {"allowedSourceRanges": ["10.1.2.3/8", "fd00::/8", "2001:db8::1/128"]}, 8080),
    ("low port", {}, 80),
    ("high port", {}, 65535),
]


@pytest.mark.parametrize(("block", "port"), [c[1:] for c in CONFIGS], ids=[c[0] for c in CONFIGS])
def test_generated_squid_conf_parses(block, port, tmp_path):
    cfg = KubernetesConfig.model_validate(block)
    req = contract.CreateRequest(name="proxy-aaaaaaaaaaaaaaaa", uid="u-1", namespace="crawl", port=port)
    conf = podlib.build_config_map(req, "crawl", "default", cfg, "pod-uid")["data"][podlib.CONF_KEY]
    out = squid_parse(conf, tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert problems(out) == [], out.stdout + out.stderr
    assert "Processing: http_access deny all" in out.stdout + out.stderr


def test_squid_parse_rejects_a_broken_config(tmp_path):
    # The check above would catch a renderer bug: Squid refuses what it cannot parse.
    out = squid_parse(
        "http_port 3128\nacl allowed_src src not-a-network\nhttp_access allow allowed_src\n", tmp_path
    )
    assert out.returncode != 0 or problems(out), out.stdout + out.stderr
