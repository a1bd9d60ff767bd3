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
attributes:
  check_mode:
    support: full
    description: Reads only.
  diff_mode:
    support: none
    description: Results describe the instances; there is no before/after diff.
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
instances:
  description: The instances found, each with id, name, uid, state, ip, created_at, installation and provider.
  returned: always
  type: list
  elements: dict
not_found:
  description: Requested ids that do not exist.
  returned: always
  type: list
  elements: str
errors:
  description: Providers or ids that could not be read (provider, id, error_class, msg).
  returned: always
  type: list
  elements: dict
providers:
  description: The providers that were listed.
  returned: when O(ids) is not used
  type: list
  elements: str
telemetry:
  description: One record per provider call.
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.crawl.egress_proxies.plugins.module_utils import inventory
from ansible_collections.crawl.egress_proxies.plugins.module_utils.proxy_module import ProxyModule


def main() -> None:
    spec = {"provider": {"type": "str"}, "ids": {"type": "list", "elements": "str"}}
    ProxyModule(spec, supports_check_mode=True).run(inventory.run)


if __name__ == "__main__":
    main()
