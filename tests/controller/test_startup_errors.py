"""Start-up mistakes as a user meets them: one line on stderr naming the flag to fix, exit code 2,
never a traceback (issue 29). Each case is a real ``python -m egress_proxies_controller`` run that
ends before it reaches any API server.

A kubeconfig whose server does not answer is not a start-up mistake (the API server may be
restarting as the Pod starts): the controller waits for it, and only after
``--cache-sync-timeout`` exits 1 with one log line, still without a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .e2e_lib import ROOT
from .hostile_files import KUBECONFIG_ALIAS, leaks

KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": "t"}}],
    "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "c",
}


def argv(tmp_path, *args) -> list[str]:
    providers = tmp_path / "providers.yaml"
    providers.write_text("providers: []\n")
    return [
        sys.executable,
        "-m",
        "egress_proxies_controller",
        "--providers-file",
        str(providers),
        "--work-dir",
        str(tmp_path / "work"),
        "--health-addr",
        "127.0.0.1:0",
        "--metrics-addr",
        "127.0.0.1:0",
        "--log-format",
        "text",
        *args,
    ]


def run_all(commands: list[list[str]], timeout: float = 120) -> list[tuple[int, str, str]]:
    """The commands run at once (each is a start-up only: the cases cost one start-up's wall time)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "controller"))
    procs = [
        subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for c in commands
    ]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        out.append((proc.returncode, stdout, stderr))
    return out


def files(tmp_path) -> dict:
    closed = tmp_path / "closed.kubeconfig"
    closed.write_text(json.dumps(KUBECONFIG))
    (tmp_path / "garbage").write_text("clusters: [\n")
    (tmp_path / "text").write_text("just some words\n")
    (tmp_path / "binary").write_bytes(b"\xff\xfe\x00")
    (tmp_path / "token.kubeconfig").write_text(KUBECONFIG_ALIAS)
    (tmp_path / "theirs").mkdir()  # a work directory, or one above it, that another user owns
    os.chown(tmp_path / "theirs", 65534, 65534)
    (tmp_path / "empty.kubeconfig").write_text("apiVersion: v1\nkind: Config\nclusters: []\n")
    (tmp_path / "half-tls").mkdir()
    (tmp_path / "half-tls" / "tls.crt").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "bad-tls").mkdir()
    for name in ("tls.crt", "tls.key"):
        (tmp_path / "bad-tls" / name).write_text("not PEM\n")
    return {"closed": str(closed), "dir": str(tmp_path)}


CASES = [
    (["--kubeconfig", "{tmp}/nonexistent"], "--kubeconfig", "No such file or directory"),
    (["--kubeconfig", "{dir}"], "--kubeconfig", "it is a directory"),
    (["--kubeconfig", "{tmp}/garbage"], "--kubeconfig", "not valid YAML"),
    (["--kubeconfig", "{tmp}/token.kubeconfig"], "--kubeconfig", "found undefined alias (line 4"),
    (["--kubeconfig", "{tmp}/text"], "--kubeconfig", "is not a kubeconfig"),
    (["--kubeconfig", "{tmp}/binary"], "--kubeconfig", "not UTF-8"),
    (["--kubeconfig", "{tmp}/empty.kubeconfig"], "--kubeconfig", "current-context"),
    (["--kubeconfig", "{closed}", "--context", "nope"], "--context", "'nope'"),
    (["--kubeconfig", "{closed}", "--health-addr", "127.0.0.1:99999"], "--health-addr", "99999"),
    (["--kubeconfig", "{closed}", "--metrics-addr", "127.0.0.1:{busy}"], "--metrics-addr", "in use"),
    (["--kubeconfig", "{closed}", "--work-dir", "{closed}/runner"], "--work-dir", "Not a directory"),
    (["--kubeconfig", "{closed}", "--work-dir", "{tmp}/theirs/runner"], "--work-dir", "uid 65534"),
    (["--kubeconfig", "{closed}", "--work-dir", "{tmp}/theirs"], "--work-dir", "belongs to uid 65534"),
    (
        ["--kubeconfig", "{closed}", "--metrics-cert-dir", "{tmp}/half-tls"],
        "--metrics-cert-dir",
        "not tls.key",
    ),
    (
        ["--kubeconfig", "{closed}", "--metrics-cert-dir", "{tmp}/bad-tls"],
        "--metrics-cert-dir",
        "not a certificate",
    ),
    # A count of things done at once (or in one run) of 0 would leave the controller doing nothing.
    *(
        (["--kubeconfig", "{closed}", flag, "0"], flag, "must be at least 1 (got 0)")
        for flag in (
            "--workers",
            "--event-senders",
            "--runs-in-flight",
            "--batch-max",
            "--poll-batch-max",
            "--module-concurrency",
        )
    ),
    # How long a run reads the instances it left starting: proxy_instance's own limits, and never
    # as long as a whole run may take (the run would be abandoned while it reads).
    (["--kubeconfig", "{closed}", "--follow-starting", "-1"], "--follow-starting", "from 0 (off) to 299"),
    (
        ["--kubeconfig", "{closed}", "--follow-starting", "601", "--run-timeout", "900"],
        "--follow-starting",
        "600",
    ),
    (
        ["--kubeconfig", "{closed}", "--follow-starting", "60", "--run-timeout", "60"],
        "--follow-starting",
        "got 60",
    ),
]


def test_a_start_up_mistake_is_one_line_naming_its_flag(tmp_path):
    import socket

    paths = files(tmp_path)
    commands = []
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        values = dict(paths, tmp=str(tmp_path), busy=busy.getsockname()[1])
        for number, (args, _flag, _words) in enumerate(CASES):
            case = tmp_path / str(number)
            case.mkdir()
            commands.append(argv(case, *[a.format(**values) for a in args]))
        # and an API server that does not answer: waited for (not a mistake), then one line
        case = tmp_path / "unanswered"
        case.mkdir()
        commands.append(argv(case, "--kubeconfig", paths["closed"], "--cache-sync-timeout", "1"))
        results = run_all(commands)
    for (args, flag, words), (code, stdout, stderr) in zip(CASES, results[:-1], strict=True):
        assert not leaks(stderr), (args, stderr)
        lines = stderr.splitlines()
        assert (code, len(lines), stdout) == (2, 1, ""), (args, code, stderr)
        assert lines[0].startswith("error: %s: " % flag), (args, lines[0])
        assert words in lines[0], (args, lines[0])
    code, _stdout, stderr = results[-1]
    assert code == 1, stderr
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if " ERROR " in line]
    assert errors and errors[-1].endswith("informer did not sync within 1s"), stderr
