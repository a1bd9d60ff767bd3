"""The real Executor (ansible-runner, the modules) over one local provider, for the tests that
run the controller's loop against real Squid with only the API server in memory."""

from __future__ import annotations

import os

import yaml
from contract.local_backend import random_loopback_range
from egress_proxies_controller.config.providers_file import ProvidersConfig
from egress_proxies_controller.runs.executor import Executor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Calls:
    """The provider calls the modules report (their telemetry), and the items fed to runs."""

    def __init__(self):
        self.records = []
        self.fed = 0

    def provider_call(self, record: dict) -> None:
        self.records.append(record)

    def items_fed(self, count: int) -> None:
        self.fed += count

    def runner_run(self, *_args, **_kwargs) -> None:
        pass

    def creates(self) -> list:
        return [r for r in self.records if r["op"] == "create"]


def local_executor(tmp_path, installation: str, calls: Calls, **kwargs) -> tuple:
    """``(Executor, ProvidersConfig)`` over a providers file with one local provider named
    ``local`` (its own state directory and loopback range); ``kwargs`` go to the Executor."""
    providers = {
        "installation": installation,
        "providers": [
            {
                "name": "local",
                "type": "local",
                "local": {"stateDir": str(tmp_path / "state"), "addressRange": random_loopback_range()},
            }
        ],
    }
    path = tmp_path / "providers.yaml"
    path.write_text(yaml.safe_dump(providers))
    executor = Executor(
        str(tmp_path / "work"),
        str(path),
        collections_path=os.path.join(ROOT, ".venv", "collections"),
        metrics=calls,
        **kwargs,
    )
    config = ProvidersConfig(str(path), str(tmp_path / "private"), lambda _path, _names: [])
    return executor, config
