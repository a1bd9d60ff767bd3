#!/usr/bin/python
# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: proxy_pool
short_description: Keep exactly N egress proxy instances of a pool, spread over providers
version_added: 0.2.0
description:
  - The playbook side of a ProxyPool (docs/pools.md, "Pools from playbooks"), in the manner of
    C(amazon.aws.ec2_instance)'s C(exact_count) - makes sure exactly O(count) instances of the
    pool O(pool) exist (O(state=present)), spread over the targets of O(spread) by weight, or
    that none is left (O(state=absent)).
  - Members are named C(<pool>-<slot>) and carry the ownership uid C(pool_<pool>_<target>_<slot>),
    both following from the pool, the target and the slot alone, so a repeated run finds the
    members it made and reports C(changed=false). New members take the smallest free slots.
  - Only an instance of this installation whose uid names this pool is a member; instances of
    another pool, of another installation and unmarked ones are never counted, kept or deleted.
  - The split is the ProxyPool's (largest remainder by weight, a target at its O(spread[].max)
    fixed there and the rest split again over the others); 6 members over weights 2:1 are 4
    and 2, 8 are 5 and 3.
  - Scaling down deletes the extras of each target, Terminated members first, then others that
    are not Running (newest first), then Running ones (oldest first). A member of a target no
    longer in O(spread), or on another provider than its target's, is an extra too.
  - A target whose create fails with error class C(permanent) or C(quota_exceeded) is skipped
    for the run (it keeps every member that has not failed, Running or on its way, that is
    Provisioning, Stopped or made in this run; only Terminated ones go, as in a ProxyPool) and
    its share goes to the other targets; RV(degraded) and RV(targets) say so (the ProxyPool's
    C(SpreadDegraded) condition), a warning too, and the task succeeds when the pool has O(count)
    members. Any other failure, or a pool left short, fails the task after everything else ran.
  - A target's share past what its provider can ever hold (a local provider's C(addressRange)) is
    cut to that before anything is created and reported as a skip is; its rest goes to the other
    targets.
  - A member name is kept on one provider only; a copy of it on another target's provider (left by
    two runs that raced, or made by hand) is deleted and that target gets a member under a free name.
  - Two runs of one pool at once end with O(count) members. A local provider's pool lock serialises
    them; elsewhere (gcp, kubernetes, kvm, kvm2) each run lists the pool again after its creates and
    keeps the first O(count) members, one per name, oldest first (creation time, then slot, target
    and provider), deleting the rest, so the run that lists last leaves exactly O(count) and
    RV(members) is what that listing kept.
  - Members that stay are converged as M(crawl.egress_proxies.proxy_instance) would (a Stopped one
    is started again, O(auth) rotated in place); their placement and port are not changed (a
    changed template applies to new members; replace old ones by scaling or with
    M(crawl.egress_proxies.proxy_instance)).
author:
  - egress-proxies maintainers (@crawl)
extends_documentation_fragment:
  - crawl.egress_proxies.providers
  - crawl.egress_proxies.attributes
attributes:
  check_mode:
    support: full
    details: Lists the providers and reports in RV(created) and RV(deleted) what would be created or
      deleted, calling no mutating provider operation. A target that would fail is not known then.
  diff_mode:
    support: full
    details: The member names before and after the run (C(before.members), C(after.members)), in
      check mode too.
seealso:
  - module: crawl.egress_proxies.proxy_instance
  - module: crawl.egress_proxies.proxy_info
  - name: Proxy pools
    description: The ProxyPool resource and its playbook side (the same split and removal order).
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/pools.md
options:
  pool:
    description:
      - The pool's name, a DNS label of at most 30 characters. It is part of every member's name
        and uid; two installations sharing a backend should not use the same pool name.
    type: str
    required: true
  count:
    description:
      - How many members the pool keeps, from 0 to 10000. Required with O(state=present).
    type: int
  state:
    description: V(present) converges exactly O(count) members; V(absent) deletes every member.
    type: str
    choices: [present, absent]
    default: present
  provider:
    description:
      - A pool on one provider (the C(name) of an entry of the providers file), as the single
        target C(default). Mutually exclusive with O(spread); one of them is required.
    type: str
  spread:
    description:
      - The targets the members are spread over (a ProxyPool's C(spec.spread)). Each names a
        configured provider; two targets may share one provider with different placements.
      - Targets repeating a name, or a provider and placement, are refused.
      - A target whose members should all go (to retire it) is set to O(spread[].weight=0)
        first; only the providers named here are listed.
    type: list
    elements: dict
    suboptions:
      name:
        description:
          - The target's name, a DNS label of at most 20 characters, part of its members' uid.
            Defaults to O(spread[].provider).
        type: str
      provider:
        description: The configured provider the target's members run on.
        type: str
        required: true
      placement:
        description: Placement fields over the top-level O(placement).
        type: dict
        suboptions:
          region:
            description: Region.
            type: str
          zone:
            description: Zone (gcp), or host (kvm, kvm2).
            type: str
          machine_type:
            description: Machine type.
            type: str
          image:
            description: Image.
            type: str
      weight:
        description: The target's share relative to the others' weights, a whole number; 0 is none.
        type: int
        default: 1
      max:
        description: The most members the target holds; the rest of its share goes to the others.
        type: int
  placement:
    description: Where every member runs (see M(crawl.egress_proxies.proxy_instance)); a target's placement overrides it.
    type: dict
    suboptions:
      region:
        description: Region.
        type: str
      zone:
        description: Zone (gcp), or host (kvm, kvm2).
        type: str
      machine_type:
        description: Machine type, from the provider's catalogue.
        type: str
      image:
        description: Image, from the provider's catalogue or a URL where the provider allows it.
        type: str
  cloud_init:
    description: Cloud-init user-data of every new member. Never logged nor returned.
    type: str
  port:
    description: Port the members listen on. Defaults to C(3128).
    type: int
  auth:
    description:
      - Basic authentication of every member, as M(crawl.egress_proxies.proxy_instance)'s O(auth)
        (rotated in place on members that stay, where the provider can). The password is never
        logged nor returned.
    type: dict
    suboptions:
      username:
        description: User name, 1 to 64 characters, without C(:), whitespace or control characters.
        type: str
        required: true
      password:
        description: Password, 1 to 256 characters, without control characters.
        type: str
        required: true
  namespace:
    description: Namespace of the members' Pods (the kubernetes provider).
    type: str
  wait:
    description: Wait until every new member is Running (and every deleted one gone). Defaults to C(false).
    type: bool
  wait_timeout:
    description: Seconds to wait for each member when O(wait) is set, more than 0 and at most 86400. Defaults to C(300).
    type: float
"""

EXAMPLES = r"""
- name: Six proxies, two thirds on one local provider and one third on another
  crawl.egress_proxies.proxy_pool:
    providers_file: /etc/egress-proxies/providers.yaml
    pool: crawl
    count: 6
    spread:
      - {provider: local-a, weight: 2}
      - {provider: local-b, weight: 1}
    wait: true
  register: pool

- name: Ten proxies with credentials, 60 % in two GCP zones and 40 % on a libvirt host (at most 5)
  crawl.egress_proxies.proxy_pool:
    pool: crawl
    count: 10
    placement: {machine_type: e2-small, image: debian-cloud/debian-12}
    spread:
      - {name: eu-b, provider: gcp-eu, placement: {zone: europe-west1-b}, weight: 3}
      - {name: eu-c, provider: gcp-eu, placement: {zone: europe-west1-c}, weight: 3}
      - {name: lab, provider: kvm, weight: 4, max: 5}
    cloud_init: "{{ lookup('file', 'squid-user-data.yaml') }}"
    auth:
      username: crawler
      password: "{{ vault_proxy_password }}"

- name: The proxy URLs of the pool's Running members
  ansible.builtin.debug:
    msg: "{{ pool.members | selectattr('state', 'eq', 'Running') | map(attribute='ip') | map('regex_replace', '^(.*)$', 'http://\\1:3128') | list }}"

- name: Remove the whole pool
  crawl.egress_proxies.proxy_pool:
    pool: crawl
    state: absent
    spread:
      - {provider: local-a}
      - {provider: local-b}
    wait: true
"""

RETURN = r"""
members:
  description: The pool's members after the run (in check mode, as they would be), by slot.
  returned: always
  type: list
  elements: dict
  sample:
    - {"name": "crawl-0", "id": "local/crawl-0", "uid": "pool_crawl_local-a_0", "provider": "local-a", "state": "Running",
       "ip": "127.88.0.1", "created_at": "2026-12-01T16:17:31.943680+00:00", "installation": "default", "target": "local-a", "slot": 0}
  contains:
    name:
      description: Instance name, C(<pool>-<slot>).
      type: str
      sample: crawl-0
    id:
      description: Provider id (empty in check mode for a member that would be created).
      type: str
      sample: local/crawl-0
    uid:
      description: Ownership mark, C(pool_<pool>_<target>_<slot>).
      type: str
      sample: pool_crawl_local-a_0
    provider:
      description: Configured provider name.
      type: str
      sample: local-a
    state:
      description: C(Provisioning), C(Running), C(Stopped) or C(Terminated); C(absent) in check mode for a member that would be created.
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
      description: The installation mark read back (empty in check mode for a member that would be created).
      type: str
      sample: default
    target:
      description: The spread target the member belongs to (C(default) for a pool given O(provider)).
      type: str
      sample: local-a
    slot:
      description: The member's slot.
      type: int
      sample: 0
created:
  description:
    - The members created (in check mode, that would be), by slot, each by provider and name as
      RV(members) are (one name may be on two providers for a moment where two runs raced).
    - In 0.2.0 a list of names.
  returned: always
  type: list
  elements: dict
  sample: [{"provider": "local-b", "name": "crawl-4", "id": "local/crawl-4", "target": "local-b", "slot": 4}]
  contains: &member_ref
    provider:
      description: Configured provider name.
      type: str
      sample: local-b
    name:
      description: Instance name, C(<pool>-<slot>).
      type: str
      sample: crawl-4
    id:
      description: Provider id (in check mode, of a member that would be created, empty where the provider knows it only once created).
      type: str
      sample: local/crawl-4
    target:
      description: The spread target the member belongs to (from its uid).
      type: str
      sample: local-b
    slot:
      description: The member's slot.
      type: int
      sample: 4
deleted:
  description:
    - The members deleted (in check mode, that would be), in the order they went, each by provider
      and name; those the run's last listing found over O(count) (another run of the pool made
      them at the same time) come last.
    - In 0.2.0 a list of names.
  returned: always
  type: list
  elements: dict
  sample: [{"provider": "local-a", "name": "crawl-7", "id": "local/crawl-7", "target": "local-a", "slot": 7}]
  contains: *member_ref
targets:
  description: One entry per spread target.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "local-a", "provider": "local-a", "weight": 2, "desired": 4, "members": 4, "degraded": false, "reason": ""}]
  contains:
    name:
      description: Target name.
      type: str
      sample: local-a
    provider:
      description: Configured provider name.
      type: str
      sample: local-a
    weight:
      description: The target's weight.
      type: int
      sample: 2
    desired:
      description: Members the split gives the target (after skipped targets' shares moved).
      type: int
      sample: 4
    members:
      description: Members the target has after the run.
      type: int
      sample: 4
    degraded:
      description:
        - Whether the target was skipped in this run because a create failed permanent or quota_exceeded,
          or its share was cut to what its provider can ever hold.
      type: bool
      sample: false
    reason:
      description: Why the target was skipped (the create's failure message), empty otherwise.
      type: str
      sample: ""
degraded:
  description:
    - The targets skipped in this run (the ProxyPool's C(SpreadDegraded)), each with the create failure
      that skipped it (or why its share was cut to its provider's capacity).
  returned: always
  type: list
  elements: dict
  sample: [{"target": "lab", "provider": "kvm", "error_class": "quota_exceeded", "msg": "crawl-3: create kvm crawl-3: quota exceeded"}]
  contains:
    target:
      description: Target name.
      type: str
      sample: lab
    provider:
      description: Configured provider name.
      type: str
      sample: kvm
    error_class:
      description: C(permanent) or C(quota_exceeded).
      type: str
      sample: quota_exceeded
    msg:
      description: The failed create's message.
      type: str
      sample: "crawl-3: create kvm crawl-3: quota exceeded"
failures:
  description:
    - Every member operation that failed (creates, checks, deletes), each as a
      M(crawl.egress_proxies.proxy_instance) item result (C(name), C(id), C(uid), C(provider), C(error_class), C(msg)).
    - Creates of a skipped target are listed here too, without failing the task.
  returned: always
  type: list
  elements: dict
  sample: [{"name": "crawl-3", "id": "", "uid": "pool_crawl_lab_3", "provider": "kvm", "state": "", "changed": false, "failed": true,
    "error_class": "quota_exceeded", "msg": "crawl-3: create kvm crawl-3: quota exceeded"}]
  contains:
    name:
      description: Member name.
      type: str
      sample: crawl-3
    id:
      description: Provider id, when one is known.
      type: str
      sample: ""
    uid:
      description: The member's uid.
      type: str
      sample: pool_crawl_lab_3
    provider:
      description: Configured provider name.
      type: str
      sample: kvm
    state:
      description: Empty, or the last state read (C(Provisioning), C(Running), C(Stopped), C(Terminated)) when a wait ran out.
      type: str
      sample: ""
    changed:
      description: Whether the member was changed before the failure (a create submitted, then failed reading back).
      type: bool
      sample: false
    failed:
      description: Always true.
      type: bool
      sample: true
    error_class:
      description: C(not_found), C(quota_exceeded), C(transient) or C(permanent).
      type: str
      sample: quota_exceeded
    msg:
      description: What failed, starting with the member's name.
      type: str
      sample: "crawl-3: create kvm crawl-3: quota exceeded"
error_class:
  description: Class of the failure, C(not_found), C(quota_exceeded), C(transient) (safe to retry) or C(permanent).
  returned: failure
  type: str
  sample: transient
telemetry:
  description: One record per provider call, which the controller turns into metrics.
  returned: always
  type: list
  elements: dict
  sample: [{"op": "list", "provider": "local-a", "class": "ok", "duration_seconds": 0.0327}]
  contains:
    op:
      description: The provider operation (C(get), C(list), C(create), C(delete), C(sync_auth)).
      type: str
      sample: list
    provider:
      description: Configured provider name.
      type: str
      sample: local-a
    class:
      description: C(ok) or the error class of the call.
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

from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import POOL_OPTIONS
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.proxy_module import ProxyModule
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import pools


def main() -> None:
    ProxyModule(
        dict(POOL_OPTIONS), supports_check_mode=True, mutually_exclusive=[("provider", "spread")]
    ).run(pools.run)


if __name__ == "__main__":
    main()
