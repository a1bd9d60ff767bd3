"""A target of the fault matrix: one provider on its real backend, reached through a Toxiproxy
link where it has a network client, plus the means to count what really is on the backend.

Each provider's adapter (target_<type>.py) wraps the contract harness of tests/contract (which
starts and owns the backend) and adds what the invariants need, read straight from the backend:
the uid marks of this installation's instances (``uid_counts``) and whether a named instance
exists (``present``), so nothing is counted through the project's own list.
"""

from __future__ import annotations

import collections
import time
import uuid

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe


class Target:
    #: the matrix column
    column = ""

    def __init__(self, backend, link=None):
        self.backend = backend
        self.link = link  # faults.toxiproxy.Proxy, or None for a backend without a network client
        self.telemetry = observe.Telemetry()
        self.faulted = self.build_faulted() if link is not None else backend.build(telemetry=self.telemetry)
        self.others = []  # names of instances not ours (unmarked, another installation)
        self.setup_others()

    # -- per provider ----------------------------------------------------------------------

    def build_faulted(self):
        """The provider under test, its backend dialled through ``self.link``, observed into
        ``self.telemetry``."""
        raise NotImplementedError

    def records(self) -> list:
        """``(name, uid, installation)`` of every instance on the backend, read directly."""
        raise NotImplementedError

    def backend_processes(self) -> list:
        """Pids of the instances' own processes on this machine (local Squids), which outlive a
        run by design."""
        return []

    def processes(self) -> list:
        """Processes a run left on this machine (only the local provider starts any)."""
        return []

    # -- shared ----------------------------------------------------------------------------

    @property
    def installation(self) -> str:
        return self.backend.installation

    @property
    def direct(self):
        return self.backend.provider

    def setup_others(self) -> None:
        """An unmarked instance and one of another installation: GC must never touch them."""
        unmarked = names.name_from_uid("unmarked-" + uuid.uuid4().hex)
        self.backend.create_unmarked(unmarked)
        other = self.backend.another_provider(installation="other-" + uuid.uuid4().hex[:8])
        req = self.request("foreign-" + uuid.uuid4().hex)
        self.foreign_id = other.create(req, Deadline(60))
        self.foreign_provider = other
        self.others = [unmarked, req.name]

    def request(self, uid: str, cloud_init: str = ""):
        return self.backend.request(uid, cloud_init=cloud_init)

    def uid_counts(self) -> collections.Counter:
        return collections.Counter(uid for _n, uid, inst in self.records() if inst == self.installation)

    def present(self, name: str) -> bool:
        return any(n == name for n, _u, _i in self.records())

    def captured_output(self) -> str:
        return self.backend.captured_output()

    def leftovers(self, provider_id: str) -> list:
        return self.backend.leftovers(provider_id)

    def backend_dir(self) -> str:
        """A directory of this session for run files (the scenario's playbooks and output)."""
        import tempfile

        if not hasattr(self, "_dir"):
            self._dir = tempfile.mkdtemp(prefix="egress-faults-%s-" % self.column)
        return self._dir

    def close(self) -> None:
        # a restart scenario (sshd, libvirtd) cuts this provider's pooled connection too: its
        # first call after may answer transient, so the delete is tried again
        for attempt in range(3):
            try:
                self.foreign_provider.delete(self.foreign_id, Deadline(60))
                break
            except Exception:
                if attempt == 2:
                    raise
                time.sleep(1)
        self.foreign_provider.close()
        if self.link is not None:
            self.faulted.close()
        if hasattr(self, "_dir"):
            import shutil

            shutil.rmtree(self._dir, ignore_errors=True)
