#!/usr/bin/python
# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: proxy_check
short_description: Check the health of the configured providers' backends
version_added: 0.1.0
description:
  - Runs every provider's health check at once, under one round timeout (O(timeout)), and returns
    per provider its targets (what can fail independently, such as an API server or a hypervisor)
    with ready, reason, message and details.
  - A check that does not finish in time is reported with reason C(Timeout) without delaying the
    other providers. A provider without a health check is reported with RV(providers[].supported=false).
author:
  - egress-proxies maintainers (@crawl)
extends_documentation_fragment:
  - crawl.egress_proxies.providers
  - crawl.egress_proxies.attributes
attributes:
  check_mode:
    support: full
    details: Reads only; check mode runs the same checks.
  diff_mode:
    support: none
    details: Reads only; there is no change to show.
seealso:
  - module: crawl.egress_proxies.proxy_instance
  - module: crawl.egress_proxies.proxy_info
  - module: crawl.egress_proxies.proxy_gc
  - plugin: crawl.egress_proxies.proxies
    plugin_type: inventory
  - name: Provider contract
    description: What every provider guarantees (states, ownership, errors).
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/contract.md
  - name: Providers file
    description: The schema of the providers file and of each provider type.
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/configuration.md
  - name: proxy_check in the module guide
    description: What each provider type checks, and the reasons it reports.
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/modules.md#proxy_check
options:
  provider:
    description: Check only this configured provider.
    type: str
  fail_on_unready:
    description: Fail the task when any provider is not ready.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Check every provider and fail when one is down
  crawl.egress_proxies.proxy_check:
    providers_file: /etc/egress-proxies/providers.yaml
    timeout: 20
    fail_on_unready: true
"""

RETURN = r"""
error_class:
  description: Class of the failure, C(not_found), C(quota_exceeded), C(transient) (safe to retry) or C(permanent).
  returned: failure
  type: str
  sample: permanent
ready:
  description: Whether every provider that supports checks is ready.
  returned: always
  type: bool
  sample: true
providers:
  description: One entry per provider, by name.
  returned: always
  type: list
  elements: dict
  sample:
    - {"name": "local", "type": "local", "supported": true, "ready": true,
       "targets": [{"target": "squid", "address": "/usr/sbin/squid", "ready": true, "reason": "Reachable",
                    "message": "Squid Cache: Version 5.7", "details": {"binary": "/usr/sbin/squid", "version": "5.7"}}]}
  contains:
    name:
      description: Configured provider name.
      type: str
      sample: local
    type:
      description: Provider type.
      type: str
      sample: local
    supported:
      description: Whether the provider has a health check.
      type: bool
      sample: true
    ready:
      description: Whether all its targets are ready (null when unsupported).
      type: bool
      sample: true
    targets:
      description: What can fail independently (a binary, a directory, an API server, a hypervisor).
      type: list
      elements: dict
      sample: [{"target": "squid", "address": "/usr/sbin/squid", "ready": true, "reason": "Reachable",
                "message": "Squid Cache: Version 5.7", "details": {"binary": "/usr/sbin/squid", "version": "5.7"}}]
      contains:
        target:
          description:
            - The target's name; C(squid) and C(stateDir) for local, the host's name for kvm/kvm2, C(project/<project>) for gcp,
              C(apiserver) for kubernetes.
          type: str
          sample: squid
        address:
          description: Where the target was reached (path, URL or host).
          type: str
          sample: /usr/sbin/squid
        ready:
          description: Whether the target is usable.
          type: bool
          sample: true
        reason:
          description:
            - C(Reachable), C(Timeout), C(Unreachable), C(Unauthorized), C(Forbidden), C(APIError), or a provider reason
              (C(SquidNotFound), C(SquidNotRunnable), C(StateDirUnusable) for local; others in docs/modules.md#proxy_check).
          type: str
          sample: Reachable
        message:
          description: A human-readable account of the check's outcome (never a secret).
          type: str
          sample: "Squid Cache: Version 5.7"
        details:
          description:
            - The facts the check read, by provider type. Keys not listed here may appear for
              other provider types (docs/modules.md#proxy_check lists them all).
          type: dict
          sample: {"binary": "/usr/sbin/squid", "version": "5.7"}
          contains:
            binary:
              description: local, target C(squid) - the Squid binary that runs.
              type: str
              sample: /usr/sbin/squid
            version:
              description: local, target C(squid) - its version.
              type: str
              sample: "5.7"
            path:
              description: local, target C(stateDir) - the state directory.
              type: str
              sample: /var/lib/egress-proxies
            instances:
              description: local, target C(stateDir) - how many instance directories it holds.
              type: int
              sample: 3
            freeBytes:
              description: local, target C(stateDir) - free space on its file system.
              type: int
              sample: 76113973248
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
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import health


def main() -> None:
    spec = {"provider": {"type": "str"}, "fail_on_unready": {"type": "bool", "default": False}}
    ProxyModule(spec, supports_check_mode=True).run(health.run)


if __name__ == "__main__":
    main()
