#!/usr/bin/python
# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: proxy_gc
short_description: Collect orphaned egress proxy instances
version_added: 0.1.0
description:
  - Lists every managed instance of each configured provider (or of O(provider)) and deletes those
    whose ownership uid is not live.
  - Never deletes an instance with an empty uid, one of another installation, one whose uid is
    live, or one younger than O(min_age) (an instance without a readable creation time counts as
    old). A provider whose list fails is skipped for the whole sweep and reported in RV(errors).
  - The live uids come from O(live_uids) or from the C(Proxy) resources of a cluster
    (O(kubeconfig), O(context), O(in_cluster)); one of them is required, so a sweep never assumes
    that nothing is live.
author:
  - egress-proxies maintainers (@crawl)
extends_documentation_fragment:
  - crawl.egress_proxies.providers
attributes:
  check_mode:
    support: full
    description: A dry run; RV(would_delete) lists what would be deleted.
  diff_mode:
    support: none
    description: Results describe the instances; there is no before/after diff.
options:
  provider:
    description: Sweep only this configured provider.
    type: str
  live_uids:
    description:
      - The uids that are live (the list may be empty). Mutually exclusive with the cluster options.
      - An empty entry, or one with leading or trailing whitespace, is refused (an empty uid protects nothing).
    type: list
    elements: str
  kubeconfig:
    description: Read the live uids from the Proxy resources of the cluster of this kubeconfig.
    type: path
  context:
    description: Kubeconfig context to use.
    type: str
  in_cluster:
    description: Read the live uids with the in-cluster service account.
    type: bool
    default: false
  min_age:
    description: Minimum age of an instance before it may be collected (C(600), C(90s), C(10m), C(1h)).
    type: str
    default: 10m
  uid_shards:
    description:
      - Collect only instances whose uid falls in one of the O(uid_shards.owned) shards; every
        other instance is kept with reason C(other-shard) (another controller replica, holding
        that shard, collects it). The shard of a uid is the integer of the first 16 hex digits of
        its SHA-256 (of the UTF-8 uid), modulo O(uid_shards.count).
      - The live uids must still be complete (every Proxy, not only those of the owned shards).
      - An instance with an empty uid is never collected, whatever its shard.
    type: dict
    suboptions:
      count:
        description: How many shards the uids are split into (1 to 4096).
        type: int
        required: true
      owned:
        description: The shards (0 to O(uid_shards.count) - 1) whose orphans this sweep may collect; may be empty.
        type: list
        elements: int
        required: true
"""

EXAMPLES = r"""
- name: Dry run against a cluster's Proxy resources
  crawl.egress_proxies.proxy_gc:
    providers_file: /etc/egress-proxies/providers.yaml
    kubeconfig: ~/.kube/config
  check_mode: true

- name: Collect orphans of the local provider, given the live uids
  crawl.egress_proxies.proxy_gc:
    provider: local
    live_uids: "{{ proxies | map(attribute='uid') | list }}"
    min_age: 10m

- name: Collect only the orphans of shards 0 and 2 of 3 (the others belong to other replicas)
  crawl.egress_proxies.proxy_gc:
    live_uids: "{{ all_proxy_uids }}"
    uid_shards:
      count: 3
      owned: [0, 2]
"""

RETURN = r"""
deleted:
  description: Instances deleted (instance fields plus reason).
  returned: always
  type: list
  elements: dict
would_delete:
  description: In check mode, instances that would be deleted.
  returned: always
  type: list
  elements: dict
kept:
  description: Instances kept, each with its reason (empty-uid, other-installation, other-shard, live, younger-than-min-age).
  returned: always
  type: list
  elements: dict
remaining:
  description:
    - Orphans whose delete failed (instance fields plus reason); the task then fails with
      RV(incomplete=true). Each delete has its own O(timeout); deletes run O(concurrency) at a time.
  returned: always
  type: list
  elements: dict
incomplete:
  description: Whether some orphans could not be deleted (they are in RV(remaining)).
  returned: always
  type: bool
skipped:
  description: Providers skipped for this sweep because their list failed.
  returned: always
  type: list
  elements: str
errors:
  description: Failures (provider, id, error_class, msg).
  returned: always
  type: list
  elements: dict
installation:
  description: The installation whose instances were considered.
  returned: always
  type: str
uid_shards:
  description: The shards this sweep collected (count and sorted owned), or null without O(uid_shards).
  returned: always
  type: dict
live_uid_count:
  description: How many live uids were known.
  returned: always
  type: int
telemetry:
  description: One record per provider call.
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.crawl.egress_proxies.plugins.module_utils import orphans
from ansible_collections.crawl.egress_proxies.plugins.module_utils.proxy_module import ProxyModule


def main() -> None:
    spec = {
        "provider": {"type": "str"},
        "live_uids": {"type": "list", "elements": "str"},
        "kubeconfig": {"type": "path"},
        "context": {"type": "str"},
        "in_cluster": {"type": "bool", "default": False},
        "min_age": {"type": "str", "default": "10m"},
        "uid_shards": {
            "type": "dict",
            "options": {
                "count": {"type": "int", "required": True},
                "owned": {"type": "list", "elements": "int", "required": True},
            },
        },
    }
    ProxyModule(
        spec,
        supports_check_mode=True,
        mutually_exclusive=[
            ("live_uids", "kubeconfig"),
            ("live_uids", "in_cluster"),
            ("live_uids", "context"),
        ],
    ).run(orphans.run)


if __name__ == "__main__":
    main()
