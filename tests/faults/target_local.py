"""The local provider on real Squid: no network client to put a link in front of, so its faults
are crashes and broken files; counts read from the state directory and the process table."""

from __future__ import annotations

import json
import os

from contract.local_backend import LocalBackend

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import store
from faults.target import Target


class LocalTarget(Target):
    column = "local"

    def __init__(self, tmp_path):
        super().__init__(LocalBackend(tmp_path), None)

    def providers_entry(self) -> dict:
        block = {"stateDir": self.backend.state_dir, "addressRange": self.backend.address_range}
        return {"name": self.direct.name, "type": "local", "local": block}

    def records(self) -> list:
        found = []
        directory = self.backend.instances_dir
        for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else []:
            if name.startswith("."):
                continue
            try:
                with open(os.path.join(directory, name, store.RECORD), encoding="utf-8") as handle:
                    marks = json.load(handle)
            except (OSError, ValueError):
                found.append((name, "", ""))
                continue
            labels = marks.get("labels", marks)
            found.append((name, labels.get(names.LABEL_UID, ""), labels.get(names.LABEL_INSTALL, "")))
        return found

    def backend_processes(self) -> list:
        return self.backend.squid_pids()

    def processes(self) -> list:
        """Squids of this state directory whose instance directory is gone (a leaked process)."""
        leaked = []
        for pid in self.backend.squid_pids():
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                argv = [a.decode() for a in handle.read().split(b"\0") if a]
            conf = next(a for a in argv if a.startswith(self.backend.instances_dir))
            if not os.path.isdir(os.path.dirname(conf)):
                leaked.append("squid pid %d (%s)" % (pid, conf))
        return leaked

    def close(self) -> None:
        super().close()
        self.backend.teardown()
