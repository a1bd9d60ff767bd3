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
attributes:
  check_mode:
    support: full
    description: Reads only.
  diff_mode:
    support: none
    description: Results describe the instances; there is no before/after diff.
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
ready:
  description: Whether every provider that supports checks is ready.
  returned: always
  type: bool
providers:
  description: One entry per provider, by name.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: Configured provider name.
      type: str
    type:
      description: Provider type.
      type: str
    supported:
      description: Whether the provider has a health check.
      type: bool
    ready:
      description: Whether all its targets are ready (null when unsupported).
      type: bool
    targets:
      description:
        - Per target, target, address, ready, reason, message and details.
        - The reason is C(Reachable), C(Timeout), C(Unreachable), C(Unauthorized), C(Forbidden),
          C(APIError) or a provider reason.
      type: list
      elements: dict
telemetry:
  description: One record per check call.
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.crawl.egress_proxies.plugins.module_utils import health
from ansible_collections.crawl.egress_proxies.plugins.module_utils.proxy_module import ProxyModule


def main() -> None:
    spec = {"provider": {"type": "str"}, "fail_on_unready": {"type": "bool", "default": False}}
    ProxyModule(spec, supports_check_mode=True).run(health.run)


if __name__ == "__main__":
    main()
