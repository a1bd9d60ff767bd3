"""Issue 40: the controller refuses what the modules refuse, with the same words.

One table of hostile providers files and paths (tests/controller/hostile_files.py) goes through
the module side (``config.providers_file.resolve``, what every module calls) and the controller
side (``ProvidersConfig.refresh``, which reads the file on every tick and checks it before the
modules see a copy). Both must refuse every row, say where (a position, a directory, a kind of
file), never quote the token planted in the file, and never block or read without bound. The
hostile credential files go through a provider's ``require_readable`` and the controller's
``CredentialWatch`` the same way.
"""

from __future__ import annotations

import os

import pytest
from egress_proxies_controller.config.credential_watch import CredentialWatch
from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.kube import client as kube_mod

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import credential_files
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.kubernetes import sdk

from .hostile_files import HOSTILE, HOSTILE_CREDENTIALS, KUBECONFIG_ALIAS, bounded, leaks

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown to nobody needs root")


def module_side(path: str) -> str:
    try:
        providers_file.resolve(path, None)
    except ConfigError as exc:
        return str(exc)
    return "accepted"


def controller_side(path: str, private: str) -> dict:
    validated = []
    reports = []

    def validate(candidate, names):  # the modules' check: never reached by a refused file
        validated.append(candidate)
        return []

    config = ProvidersConfig(path, private, validate, reports.append)
    took = config.refresh()
    return {"took": took, "error": config.error, "reports": reports, "validated": len(validated)}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_both_sides_refuse_a_hostile_providers_file_alike(tmp_path, case):
    make, words = HOSTILE[case]
    path = make(tmp_path)
    module = bounded(lambda: module_side(path))
    controller = bounded(lambda: controller_side(path, str(tmp_path / "private")))
    assert module != "accepted" and words in module, module
    assert controller["took"] is False and controller["validated"] == 0, controller
    assert words in controller["error"] and controller["error"].startswith(path), controller
    assert controller["reports"] == [controller["error"]], controller
    assert not leaks(module + repr(controller))


@pytest.mark.parametrize("case", sorted(HOSTILE_CREDENTIALS))
def test_both_sides_refuse_a_hostile_credential_file_without_blocking(tmp_path, case):
    make, words = HOSTILE[case][0], HOSTILE_CREDENTIALS[case]
    path = make(tmp_path)

    def module():
        try:
            credential_files.require_readable(path, "kubeconfig")
        except (credential_files.CredentialsUnsafe, credential_files.CredentialsUnavailable) as exc:
            return "%s: %s" % (type(exc).__name__, exc)
        return "accepted"

    def controller():
        watch = CredentialWatch()
        entries = {"k": {"name": "k", "type": "kubernetes", "kubernetes": {"kubeconfig": path}}}
        watch.refresh(entries)
        return watch._digest(path)  # what the watch keeps of the file: a digest or a reason

    refused, kept = bounded(module), bounded(controller)
    assert refused.startswith("CredentialsUnsafe: kubeconfig %s is refused" % path) and words in refused
    assert kept.startswith("unreadable: ") and words in kept, kept


def test_a_fifo_planted_at_a_missing_credential_file_never_blocks_the_loop(tmp_path):
    """The path was missing at the first tick (a Secret still mounting) and a FIFO appears."""
    path = tmp_path / "kubeconfig"
    entries = {"k": {"name": "k", "type": "kubernetes", "kubernetes": {"kubeconfig": str(path)}}}

    def ticks():
        watch = CredentialWatch()
        watch.refresh(entries)
        os.mkfifo(path)
        return sorted(watch.refresh(entries)), watch._digest(str(path))

    changed, kept = bounded(ticks)
    assert changed == ["k"] and "FIFO" in kept


def test_both_sides_read_a_kubeconfig_without_quoting_it(tmp_path):
    """The kubernetes provider's kubeconfig (loaded by the client library, which parses it with
    PyYAML) and the controller's --kubeconfig: an alias written where the token belongs is
    reported by position, never by its name."""
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG_ALIAS)
    parsed = providers_file.parse(
        {"providers": [{"name": "k", "type": "kubernetes", "kubernetes": {"kubeconfig": str(path)}}]}
    )
    with pytest.raises(sdk.ConfigException) as module:
        sdk.api_client(parsed.providers[0].block)
    with pytest.raises(kube_mod.StartupError) as controller:
        kube_mod.load(str(path))
    for message in (str(module.value), str(controller.value)):
        assert "found undefined alias (line 4" in message and not leaks(message), message
