#!/usr/bin/python
# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: proxy_info
short_description: List or read egress proxy instances
version_added: 0.1.0
description:
  - Without O(ids), lists every managed instance of this installation on one provider
    (O(provider)) or on all configured providers, one list call per provider.
  - With O(ids), reads those instances of O(provider); ids that are gone are returned in
    RV(not_found).
  - A provider or id that cannot be read is reported in RV(errors) with its error class; it
    never shows up as an empty result.
author:
  - egress-proxies maintainers (@crawl)
extends_documentation_fragment:
  - crawl.egress_proxies.providers
  - crawl.egress_proxies.attributes
attributes:
  check_mode:
    support: full
    details: Reads only; check mode changes nothing.
  diff_mode:
    support: none
    details: Reads only; there is no change to show.
seealso:
  - module: crawl.egress_proxies.proxy_instance
  - module: crawl.egress_proxies.proxy_gc
  - module: crawl.egress_proxies.proxy_check
  - plugin: crawl.egress_proxies.proxies
    plugin_type: inventory
  - name: Provider contract
    description: What every provider guarantees (states, ownership, errors).
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/contract.md
  - name: Providers file
    description: The schema of the providers file and of each provider type.
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/configuration.md
  - name: Inventory
    description: The same listing as inventory hosts.
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/inventory.md
options:
  provider:
    description: Name of a configured provider. Required with O(ids); all providers otherwise.
    type: str
  ids:
    description: Provider ids to read.
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Every managed instance of every configured provider
  crawl.egress_proxies.proxy_info:
    providers_file: /etc/egress-proxies/providers.yaml
  register: fleet

- name: Two instances by id
  crawl.egress_proxies.proxy_info:
    provider: local
    ids:
      - local/proxy-a3k2m4n5p6q7r8s9
      - local/proxy-b4l3n5o6q7r8s9t2
"""

RETURN = r"""
error_class:
  description: Class of the failure, C(not_found), C(quota_exceeded), C(transient) (safe to retry) or C(permanent).
  returned: failure
  type: str
  sample: permanent
instances:
  description: The instances found.
  returned: always
  type: list
  elements: dict
  sample:
    - {"id": "local/proxy-a3k2m4n5p6q7r8s9", "name": "proxy-a3k2m4n5p6q7r8s9", "uid": "0f7c1a52-7d0e-4c55-9d1e-3b2f0c6a8e11",
      "state": "Running", "ip": "127.88.0.1", "created_at": "2026-12-01T16:17:31.943680+00:00", "installation": "default", "provider": "local"}
  contains:
    id:
      description: Provider id, self-contained (location included); empty when none exists.
      type: str
      sample: local/proxy-a3k2m4n5p6q7r8s9
    name:
      description: Instance name (derived from the uid unless given).
      type: str
      sample: proxy-a3k2m4n5p6q7r8s9
    uid:
      description: Ownership mark read back from the backend (the owner's uid).
      type: str
      sample: 0f7c1a52-7d0e-4c55-9d1e-3b2f0c6a8e11
    state:
      description:
        - C(Provisioning), C(Running), C(Stopped) or C(Terminated) as read from the backend.
        - C(absent) when the instance does not exist (also in check mode for one that would be created).
        - C(deleting) in check mode for an instance that would be deleted.
        - Empty for an item that failed before its instance was read.
      type: str
      sample: Running
    ip:
      description: Address of the proxy; set only when Running.
      type: str
      sample: 127.88.0.1
    created_at:
      description: Creation time read back from the backend (ISO 8601), empty when unknown.
      type: str
      sample: "2026-12-01T16:17:31.943680+00:00"
    installation:
      description: The installation mark read back from the instance; empty when it does not exist.
      type: str
      sample: default
    provider:
      description: Configured provider name.
      type: str
      sample: local
not_found:
  description: Requested ids that do not exist.
  returned: always
  type: list
  elements: str
  sample: [local/proxy-b4l3n5o6q7r8s9t2]
errors:
  description: Providers or ids that could not be read; they never show up as an empty result.
  returned: always
  type: list
  elements: dict
  sample: [{"provider": "gce", "id": "", "error_class": "transient", "msg": "list timed out after 120.0s"}]
  contains:
    provider:
      description: Configured provider name.
      type: str
      sample: gce
    id:
      description: The instance id concerned; empty when the provider's list failed.
      type: str
      sample: ""
    error_class:
      description: C(not_found), C(quota_exceeded), C(transient) or C(permanent).
      type: str
      sample: transient
    msg:
      description: What failed (never a secret).
      type: str
      sample: "list timed out after 120.0s"
providers:
  description: The providers that were listed.
  returned: when O(ids) is not used
  type: list
  elements: str
  sample: [local]
telemetry:
  description: One record per provider call, which the controller turns into metrics.
  returned: always
  type: list
  elements: dict
  sample: [{"op": "get", "provider": "local", "class": "ok", "duration_seconds": 0.0327}]
  contains:
    op:
      description: The provider operation (C(get), C(list), C(create), C(delete), C(check)).
      type: str
      sample: get
    provider:
      description: Configured provider name.
      type: str
      sample: local
    class:
      description: C(ok) or the error class of the call (C(not_found), C(quota_exceeded), C(transient), C(permanent)).
      type: str
      sample: ok
    duration_seconds:
      description: How long the call took.
      type: float
      sample: 0.0327
problems:
  description: When the providers configuration is invalid, every problem found, each naming its path (nothing is touched then).
  returned: failure, for an invalid providers configuration
  type: list
  elements: str
  sample: ["providers[0].local.bogus: unknown field (allowed: addressRange, squidBinary, stateDir)"]
debug_log:
  description: At verbosity C(-vvv) and above, the provider's log lines of this run (never a secret).
  returned: at -vvv, when the providers logged anything
  type: list
  elements: str
  sample: ["DEBUG local: list 3 instances"]
"""

from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.proxy_module import ProxyModule
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import inventory


def main() -> None:
    spec = {"provider": {"type": "str"}, "ids": {"type": "list", "elements": "str"}}
    ProxyModule(spec, supports_check_mode=True).run(inventory.run)


if __name__ == "__main__":
    main()
