"""The libvirt (kvm2) provider over real sshd, with a Toxiproxy link in front of sshd (its
known_hosts names the link's port with sshd's host key); counts read through libvirtd's unix
socket."""

from __future__ import annotations

import os

import libvirt
from contract.libvirt_backend import HOST_NAME, LibvirtContractBackend

from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.libvirt import metadata
from faults.target import Target


class LibvirtTarget(Target):
    column = "libvirt"

    def __init__(self, toxiproxy, tag: str, host, images):
        self.host = host
        backend = LibvirtContractBackend(host, images)
        super().__init__(backend, toxiproxy.create("ssh-" + tag, "127.0.0.1:%d" % host.sshd_port))

    def build_faulted(self):
        line = self.host.known_hosts_line("host_key").split(" ", 1)[1]
        known = os.path.join(self.host.ssh_dir, "known_hosts-%d" % self.link.port)
        with open(known, "w", encoding="utf-8") as handle:
            handle.write("[127.0.0.1]:%d %s" % (self.link.port, line))
        host = dict(self.backend.block()["hosts"][0], name=HOST_NAME, address=self.link.listen)
        return self.backend.build(telemetry=self.telemetry, hosts=[host], knownHostsFile=known)

    def providers_entry(self) -> dict:
        return {
            "name": self.direct.name,
            "type": self.backend.type_name,
            self.backend.type_name: self.backend.block(),
        }

    def records(self) -> list:
        found = []
        namespace = metadata.namespace(self.backend.type_name)
        for domain in self.host.direct().listAllDomains():
            try:
                marks = metadata.parse_element(
                    domain.metadata(libvirt.VIR_DOMAIN_METADATA_ELEMENT, namespace, 0)
                )
            except (libvirt.libvirtError, metadata.MarksError):
                found.append((domain.name(), "", ""))
                continue
            found.append((domain.name(), marks.uid, marks.installation))
        return found

    def close(self) -> None:
        super().close()
        self.backend.teardown()
