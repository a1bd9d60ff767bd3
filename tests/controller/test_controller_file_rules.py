"""Issue 40 §1 and §2 on the controller's own paths: what it parses never reaches a message,
and the work directory root runs files from is ours or refused.

A YAML mistake on the line of a kubernetes ``apiKey`` made ``check`` return PyYAML's message,
which copies the line (token included) into ``/readyz``, the log and a Lease Event; the same
went for ``--kubeconfig``. The work directory was created with ``exist_ok`` and chmod 0700
without a look at who owned it, and root runs the fork server's stand-in from it.
"""

from __future__ import annotations

import json
import logging
import os
import pathlib
import shutil
import tempfile

import pytest
from egress_proxies_controller.config.providers_file import ProvidersConfig, check
from egress_proxies_controller.kube import client as kube_mod
from egress_proxies_controller.runs.executor import Executor

from .hostile_files import KUBECONFIG_ALIAS, NOBODY, SENTINEL, bounded, leaks

API_KEY_LINE = (
    "providers:\n  - name: k\n    type: kubernetes\n    kubernetes:\n"
    "      host: https://127.0.0.1:6443\n      apiKey: %s x: y\n" % SENTINEL
).encode()


@pytest.mark.parametrize(
    "data,words",
    [
        (API_KEY_LINE, "not valid YAML: mapping values are not allowed here (line 6, column"),
        (b"providers:\n  - name: *" + SENTINEL.encode() + b"\n", "found undefined alias (line 2"),
        (b"providers: []\n" + SENTINEL.encode() + b": [\n", "(line 3"),
        (
            b'providers:\n  - {name: "' + SENTINEL.encode() + b'\\q"}\n',
            "unknown escape character 'q' (line 2",
        ),
    ],
)
def test_check_gives_the_position_never_the_content(data, words):
    names, message = check(data, "/etc/p.yaml")
    assert names == [] and message.startswith("/etc/p.yaml: ") and words in message, message
    assert not leaks(message)


def test_the_report_log_line_and_readyz_detail_never_carry_the_token(tmp_path, caplog):
    path = tmp_path / "providers.yaml"
    path.write_bytes(API_KEY_LINE)
    reports = []
    config = ProvidersConfig(str(path), str(tmp_path / "private"), lambda c, n: [], reports.append)
    with caplog.at_level(logging.DEBUG):
        assert config.refresh() is False
    assert reports == [config.error] and "line 6" in config.error
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "providers file problem" in logged
    assert not leaks(config.error + logged)


def test_a_kubeconfig_yaml_mistake_never_quotes_the_token(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG_ALIAS)
    with pytest.raises(kube_mod.StartupError) as caught:
        kube_mod.load(str(kubeconfig))
    assert caught.value.flag == "--kubeconfig" and "found undefined alias (line 4" in str(caught.value)
    assert not leaks(str(caught.value))


pytestmark_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to nobody needs root")


@pytestmark_root
@pytest.mark.parametrize(
    "how,words",
    [
        ("work dir owned by nobody", "belongs to uid 65534"),
        ("parent owned by nobody", "belongs to uid 65534, who could replace work"),
        ("parent world-writable", "writable by every user, who could replace work"),
        ("stand-in directory owned by nobody", "fork-server/bin belongs to uid 65534"),
        ("stand-in writable by every user", "ansible-playbook is writable by every user"),
    ],
)
def test_a_work_dir_another_user_could_change_is_refused(tmp_path, how, words):
    parent = tmp_path / "parent"
    work = parent / "work"
    bin_dir = work / "fork-server" / "bin"
    bin_dir.mkdir(parents=True)
    stand_in = bin_dir / "ansible-playbook"
    stand_in.write_text("#!/bin/sh\ntouch %s\n" % (tmp_path / "ran"))
    stand_in.chmod(0o700)
    {
        "work dir owned by nobody": lambda: os.chown(work, NOBODY, NOBODY),
        "parent owned by nobody": lambda: os.chown(parent, NOBODY, NOBODY),
        "parent world-writable": lambda: parent.chmod(0o777),
        "stand-in directory owned by nobody": lambda: os.chown(bin_dir, NOBODY, NOBODY),
        "stand-in writable by every user": lambda: stand_in.chmod(0o777),
    }[how]()
    with pytest.raises(Exception, match="is refused: .*%s" % words) as caught:
        Executor(str(work), str(tmp_path / "providers.yaml"))
    assert type(caught.value).__name__ == "UnsafeWorkDir"  # runs/work_dir.py
    assert not (tmp_path / "ran").exists()


@pytestmark_root
def test_an_own_work_dir_is_taken_and_made_private(tmp_path):
    work = tmp_path / "work"
    work.mkdir(mode=0o755)
    Executor(str(work), str(tmp_path / "providers.yaml"), fork_server=False).close()
    assert oct(work.stat().st_mode & 0o777) == "0o700"


@pytestmark_root
def test_a_non_root_controller_takes_a_work_dir_on_a_world_writable_volume():
    """The shipped Pod: uid 65532 alone, --work-dir below an emptyDir, which Kubernetes makes
    0777. Only root's work directory, and what root reads configuration from, need the
    directories above them to be safe."""
    top = tempfile.mkdtemp(prefix="egress-proxies-pod-")  # pytest's tmp_path is root's 0700
    os.chmod(top, 0o755)
    volume = pathlib.Path(top) / "volume"
    volume.mkdir()
    volume.chmod(0o777)

    def as_the_pod_user():
        os.setgid(65532)
        os.setuid(65532)
        executor = Executor(str(volume / "runner"), str(volume / "providers.yaml"), fork_server=False)
        executor.close()
        from egress_proxies_controller.runs import work_dir

        from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file

        work_dir.private_dir(str(volume / "runner" / "fork-server"))
        copy = volume / "runner" / "providers.yaml"  # as the private copy the modules read
        copy.write_text("providers: []\n")
        assert list(providers_file.load_file(str(copy)).providers) == []
        return oct(os.stat(volume / "runner").st_mode & 0o777)

    try:
        assert bounded(as_the_pod_user) == "0o700"
    finally:
        shutil.rmtree(top)


def test_the_controllers_client_keeps_a_connection_for_each_thread_that_shares_it(tmp_path):
    """The workers, the Event senders, the watches and the loops share one client; the client's
    default pool (5 per CPU) closed what did not fit: a TLS handshake per request beyond it."""
    from egress_proxies_controller import flags

    from .test_startup_errors import KUBECONFIG

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(KUBECONFIG))
    client = kube_mod.load(str(kubeconfig))
    kept = client.rest_client.pool_manager.connection_pool_kw["maxsize"]
    defaults = flags.parser().parse_args(["--providers-file", "x"])
    assert kept == kube_mod.POOL_SIZE >= defaults.workers + defaults.event_senders + 8, kept
