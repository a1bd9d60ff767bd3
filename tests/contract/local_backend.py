"""The contract-suite harness (``harness.Backend``) for the ``local`` provider and real Squid.

Used by ``test_local.py`` (and reusable by any test that needs a throwaway local provider).
Each harness owns a state directory under the test's ``tmp_path`` and a random loopback /24,
so concurrent runs never share an address or an instance. It reaches behind the provider only
through the store's on-disk layout and ``/proc``; at teardown it deletes every instance,
then kills by pid any Squid still running from its own state directory, and fails loudly if
one survives.
"""

from __future__ import annotations

import contextlib
import datetime
import glob
import ipaddress
import json
import os
import random
import shutil
import signal
import time

import squid_procs
from listen_ports import free_port

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import (
    CreateRequest,
    Placement,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.deadline import Deadline
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local import process, store
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.provider import (
    ID_PREFIX,
    parse_id,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import observe

SQUID = "/usr/sbin/squid"
PROVIDER_NAME = "contract-local"  # deliberately not the type name


def random_loopback_range() -> str:
    """A random 127.X.Y.0/24 avoiding 127.0/16 (the usual loopback) and 127.77/16 (the default)."""
    rng = random.SystemRandom()
    second = rng.choice([x for x in range(1, 255) if x != 77])
    return "127.%d.%d.0/24" % (second, rng.randrange(0, 256))


class LocalBackend:
    reaches_running = True
    timeout = 20.0

    def __init__(self, tmp_path):
        self.state_dir = str(tmp_path / "state")
        self.instances_dir = os.path.join(self.state_dir, store.INSTANCES)
        self.address_range = random_loopback_range()
        self.installation = "ct-%s" % random.SystemRandom().getrandbits(32).to_bytes(4, "big").hex()
        self.telemetry = observe.Telemetry()
        self.provider = self.build()
        self._ports = {}
        self._unmarked = []  # made behind the provider's back; removed the same way
        self.malformed_ids = [
            "",
            "proxy-abcdefghijklmnop",  # no prefix
            "local/",
            "local",
            "local/Proxy-ABC",  # not a DNS label
            "local/proxy-x/extra",
            "local/../etc",
            "local/proxy-x\n",
            " local/proxy-x",
            "local/" + "a" * 64,
            "gcp/zones/z/instances/proxy-x",
            "local/-proxy",
            None,
        ]

    # -- construction --------------------------------------------------------------------

    def build(
        self, installation: str | None = None, allowed_source_ranges=None, telemetry=None, state_dir=None
    ):
        """A provider on this harness's state directory and range (observed into ``telemetry``,
        by default the harness's own)."""
        block = {
            "stateDir": state_dir or self.state_dir,
            "squidBinary": SQUID,
            "addressRange": self.address_range,
        }
        if allowed_source_ranges is not None:
            block["allowedSourceRanges"] = list(allowed_source_ranges)
        parsed = providers_file.parse(
            {
                "installation": installation or self.installation,
                "providers": [{"name": PROVIDER_NAME, "type": "local", "local": block}],
            }
        )
        chosen = self.telemetry if telemetry is None else telemetry
        return registry.build(parsed.providers[0], parsed.installation, chosen)

    def another_provider(self, installation: str | None = None):
        return self.build(installation=installation, telemetry=observe.Telemetry())

    @contextlib.contextmanager
    def unproven_backend(self, body: str):
        """No HTTP here: the nearest equivalent is a state directory whose ``instances`` is a
        regular file, so nothing can be read, listed or removed (``body`` does not apply)."""
        broken = self.state_dir + "-unproven"
        os.makedirs(broken, exist_ok=True)
        with open(os.path.join(broken, store.INSTANCES), "w") as handle:
            handle.write(body)
        try:
            yield self.build(telemetry=observe.Telemetry(), state_dir=broken)
        finally:
            shutil.rmtree(broken, ignore_errors=True)

    def request(self, uid: str, cloud_init: str = "") -> CreateRequest:
        port = self._ports.setdefault(uid, free_port())
        return CreateRequest(
            name=names.name_from_uid(uid),
            uid=uid,
            namespace="contract",
            proxy_name="proxy-under-test",
            placement=Placement(region="ignored", zone="ignored", machine_type="ignored", image="ignored"),
            cloud_init=cloud_init,
            port=port,
        )

    # -- behind the provider's back ------------------------------------------------------

    def instance_dir(self, provider_id: str) -> str:
        return os.path.join(self.instances_dir, parse_id(provider_id))

    def create_unmarked(self, name: str) -> None:
        """The store's layout, with our installation mark, an empty UID and no managed mark:
        only the missing managed mark keeps it out of our list, and create must not adopt it."""
        directory = os.path.join(self.instances_dir, name)
        os.makedirs(directory)
        last = list(ipaddress.ip_network(self.address_range).hosts())[-1]
        record = {
            names.LABEL_UID: "",
            names.LABEL_INSTALL: self.installation,
            "name": name,
            "createdAt": "2000-01-01T00:00:00+00:00",
            "address": str(last),
            "port": 3128,
        }
        with open(os.path.join(directory, store.RECORD), "w", encoding="utf-8") as handle:
            json.dump(record, handle)
        self._unmarked.append(name)

    def force_unknown_state(self, provider_id: str) -> None:
        """SIGSTOP the instance's own Squid: a suspended process never resumes by itself."""
        directory = self.instance_dir(provider_id)
        state, pid = process.status(directory)
        assert state == process.ALIVE, "no live Squid for %s (%s)" % (provider_id, state)
        os.kill(pid, signal.SIGSTOP)
        end = time.monotonic() + 5.0
        while process.status(directory)[0] != process.SUSPENDED:
            assert time.monotonic() < end, "Squid pid %d did not stop" % pid
            time.sleep(0.01)

    def backend_record(self, provider_id: str) -> dict:
        with open(os.path.join(self.instance_dir(provider_id), store.RECORD), encoding="utf-8") as handle:
            record = json.load(handle)
        return {
            "uid": record.get(names.LABEL_UID, ""),
            "created_at": datetime.datetime.fromisoformat(record["createdAt"]),
        }

    @contextlib.contextmanager
    def break_listing(self):
        """Replace ``instances`` by a regular file: unlistable even for root."""
        os.makedirs(self.instances_dir, exist_ok=True)
        hidden = os.path.join(self.state_dir, ".instances-hidden")
        os.rename(self.instances_dir, hidden)
        try:
            with open(self.instances_dir, "w", encoding="utf-8") as handle:
                handle.write("not a directory\n")
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.instances_dir)
            os.rename(hidden, self.instances_dir)

    def leftovers(self, provider_id: str) -> list:
        name = parse_id(provider_id)
        directory = os.path.join(self.instances_dir, name)
        found = []
        if os.path.lexists(directory):
            found.append("directory %s" % directory)
        for pid in self.squid_pids(os.path.join(directory, process.CONF)):
            found.append("squid pid %d" % pid)
        found += ["shared memory %s" % s for s in glob.glob("/dev/shm/%s-*" % process.service_name(name))]
        return found

    def captured_output(self) -> str:
        """Every file under the state directory (squid.conf, logs, records), as text."""
        chunks = []
        for root, _dirs, files in os.walk(self.state_dir):
            for file_name in sorted(files):
                path = os.path.join(root, file_name)
                with contextlib.suppress(OSError), open(path, "rb") as handle:
                    chunks.append(handle.read().decode("utf-8", "replace"))
        return "\n".join(chunks)

    # -- processes -----------------------------------------------------------------------

    @staticmethod
    def service_of(pid: int) -> str:
        """The ``-n`` service name of a Squid (it names its shared-memory segments)."""
        argv = process._cmdline(pid)
        return argv[argv.index("-n") + 1] if "-n" in argv[:-1] else ""

    def squid_pids(self, conf_path: str | None = None) -> list:
        """Pids whose command line names a squid.conf of this state directory (or ``conf_path``)."""
        return squid_procs.squid_pids(self.instances_dir, conf_path)

    def teardown(self) -> None:
        problems = []
        if os.path.isfile(self.instances_dir):  # a test died inside break_listing
            os.unlink(self.instances_dir)
            os.rename(os.path.join(self.state_dir, ".instances-hidden"), self.instances_dir)
        for name in self._unmarked:  # the provider rightly refuses to delete what is not ours
            shutil.rmtree(os.path.join(self.instances_dir, name), ignore_errors=True)
        if os.path.isdir(self.instances_dir):
            for name in sorted(os.listdir(self.instances_dir)):
                if name.startswith(".") or not names.is_dns_label(name):
                    continue
                try:
                    self.provider.delete(ID_PREFIX + name, Deadline(15))
                except Exception as exc:
                    problems.append("delete %s: %s" % (name, exc))
        for pid in self.squid_pids():
            problems.append("squid pid %d survived delete; killed" % pid)
            service = self.service_of(pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            child = process._children.pop(pid, None)  # reap what this process started
            if child is not None:
                child.wait(timeout=5)
            if service:
                for segment in glob.glob("/dev/shm/%s-*" % service):
                    os.unlink(segment)
        if os.path.isdir(self.instances_dir):
            for name in os.listdir(self.instances_dir):
                for segment in glob.glob("/dev/shm/%s-*" % process.service_name(name)):
                    os.unlink(segment)
        shutil.rmtree(self.state_dir, ignore_errors=True)
        assert not problems, "teardown found leftovers: %s" % problems
