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
  - crawl.egress_proxies.attributes
attributes:
  check_mode:
    support: full
    details: A dry run; RV(would_delete) lists what would be deleted.
  diff_mode:
    support: full
    details:
      - One entry per deleted (in check mode, would-be-deleted) instance, with C(name), C(provider), C(id), C(uid) and
        C(created_at) as the list read them before, and an empty mapping after.
seealso:
  - module: crawl.egress_proxies.proxy_instance
  - module: crawl.egress_proxies.proxy_info
  - module: crawl.egress_proxies.proxy_check
  - plugin: crawl.egress_proxies.proxies
    plugin_type: inventory
  - name: Provider contract
    description: What every provider guarantees (states, ownership, errors).
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/contract.md
  - name: Providers file
    description: The schema of the providers file and of each provider type.
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/configuration.md
  - name: proxy_gc in the module guide
    description: When an instance is an orphan, and what is never deleted.
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/modules.md#proxy_gc
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
    version_added: 0.2.0
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
  description: Instances deleted.
  returned: always
  type: list
  elements: dict
  sample:
    - {"id": "local/proxy-a3k2m4n5p6q7r8s9", "name": "proxy-a3k2m4n5p6q7r8s9", "uid": "0f7c1a52-7d0e-4c55-9d1e-3b2f0c6a8e11",
       "state": "Running", "ip": "127.88.0.1", "created_at": "2026-12-01T16:17:31.943680+00:00", "installation": "default", "provider": "local",
       "reason": "orphan"}
  contains: &listed_fields
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
    reason:
      description:
        - Why the instance is in this list. In RV(deleted), RV(would_delete) and RV(remaining) always C(orphan) (its uid is not live).
        - In RV(kept) one of C(empty-uid), C(other-installation), C(other-shard), C(live) or C(younger-than-min-age).
      type: str
      sample: orphan
would_delete:
  description: In check mode, instances that would be deleted.
  returned: always
  type: list
  elements: dict
  sample:
    - {"id": "local/proxy-a3k2m4n5p6q7r8s9", "name": "proxy-a3k2m4n5p6q7r8s9", "uid": "0f7c1a52-7d0e-4c55-9d1e-3b2f0c6a8e11",
       "state": "Running", "ip": "127.88.0.1", "created_at": "2026-12-01T16:17:31.943680+00:00", "installation": "default", "provider": "local",
       "reason": "orphan"}
  contains: *listed_fields
kept:
  description: Instances kept, each with its reason (empty-uid, other-installation, other-shard, live, younger-than-min-age).
  returned: always
  type: list
  elements: dict
  sample:
    - {"id": "local/proxy-a3k2m4n5p6q7r8s9", "name": "proxy-a3k2m4n5p6q7r8s9", "uid": "0f7c1a52-7d0e-4c55-9d1e-3b2f0c6a8e11",
       "state": "Running", "ip": "127.88.0.1", "created_at": "2026-12-01T16:17:31.943680+00:00", "installation": "default", "provider": "local",
       "reason": "live"}
  contains: *listed_fields
remaining:
  description:
    - Orphans whose delete failed; the task then fails with RV(incomplete=true).
    - Each delete has its own O(timeout); deletes run O(concurrency) at a time.
  returned: always
  type: list
  elements: dict
  sample:
    - {"id": "local/proxy-a3k2m4n5p6q7r8s9", "name": "proxy-a3k2m4n5p6q7r8s9", "uid": "0f7c1a52-7d0e-4c55-9d1e-3b2f0c6a8e11",
       "state": "Running", "ip": "127.88.0.1", "created_at": "2026-12-01T16:17:31.943680+00:00", "installation": "default", "provider": "local",
       "reason": "orphan"}
  contains: *listed_fields
incomplete:
  description: Whether some orphans could not be deleted (they are in RV(remaining)).
  returned: always
  type: bool
  sample: false
skipped_providers:
  description:
    - Providers skipped for this sweep because their list failed.
    - Called C(skipped) before 0.3.0, a name every ansible-core reads as "the task was skipped".
  returned: always
  type: list
  elements: str
  sample: [gce]
  version_added: 0.3.0
errors:
  description: Failures of a provider's list or of a delete.
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
installation:
  description: The installation whose instances were considered.
  returned: always
  type: str
  sample: default
uid_shards:
  description: The shards this sweep collected (count and sorted owned), or null without O(uid_shards).
  returned: always
  type: dict
  sample: {"count": 3, "owned": [0, 2]}
  contains:
    count:
      description: How many shards the uids are spread over.
      type: int
      returned: when O(uid_shards) was given
      sample: 3
    owned:
      description: The shards whose orphans this sweep collected.
      type: list
      elements: int
      returned: when O(uid_shards) was given
      sample: [0, 2]
live_uid_count:
  description: How many live uids were known.
  returned: always
  type: int
  sample: 12
live_uid_source:
  description: Where the live uids came from, C(live_uids) (the option) or C(cluster) (the Proxy resources).
  returned: always
  type: str
  sample: live_uids
min_age_seconds:
  description: O(min_age) in seconds, as the sweep applied it.
  returned: always
  type: float
  sample: 600.0
error_class:
  description: Class of the failure, C(not_found), C(quota_exceeded), C(transient) (safe to retry) or C(permanent).
  returned: failure (also when RV(incomplete) is true)
  type: str
  sample: transient
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
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import orphans


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
