"""The gcp provider behind a Toxiproxy link to the Compute Engine fake; counts read from the
fake's store. The fake's own fault injection gives the backend answers (500, 429, 403...)."""

from __future__ import annotations

from contract.gcp_backend import GcpBackend

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import names
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.gcp import labels
from faults.target import Target


class GcpTarget(Target):
    column = "gcp"

    def __init__(self, toxiproxy, tag: str):
        backend = GcpBackend()
        upstream = backend.fake.endpoint.split("//", 1)[1]
        super().__init__(backend, toxiproxy.create("gcp-" + tag, upstream))

    @property
    def fake(self):
        return self.backend.fake

    def build_faulted(self):
        return self.backend.build(telemetry=self.telemetry, apiEndpoint="http://" + self.link.listen)

    def providers_entry(self) -> dict:
        """The provider as a providers-file entry (for the playbook scenarios), dialled directly."""
        block = {"project": self.fake.project, "apiEndpoint": self.fake.endpoint}
        return {"name": self.direct.name, "type": "gcp", "gcp": block}

    def records(self) -> list:
        with self.fake.state.lock:
            self.fake.state._advance()  # the fake moves its clock on each request: catch up first
            items = list(self.fake.state.instances.items())
        found = []
        for (_zone, name), record in items:
            body = record["body"]
            install = (body.get("labels") or {}).get(names.LABEL_INSTALL, "")
            found.append((name, labels.uid_of(body), install))
        return found

    def close(self) -> None:
        super().close()
        self.backend.teardown()
