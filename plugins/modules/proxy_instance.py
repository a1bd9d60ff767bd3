#!/usr/bin/python
# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: proxy_instance
short_description: Create or delete egress proxy instances on any configured provider
version_added: 0.1.0
description:
  - Makes sure an egress proxy instance exists (O(state=present)) or is gone (O(state=absent)) on
    a configured provider (C(local), C(kubernetes), C(gcp), C(kvm), C(kvm2)).
  - Idempotent. An instance is identified by its name, derived from O(uid) unless given, so a
    repeated run finds the instance it created before and reports C(changed=false).
  - An existing instance is adopted only when its ownership mark (uid) matches; another uid is a
    permanent error and the instance is left untouched.
  - The batch form O(instances) converges many instances in one module run, concurrently, with
    one result per item. Top-level per-instance options are defaults for every item.
author:
  - egress-proxies maintainers (@crawl)
extends_documentation_fragment:
  - crawl.egress_proxies.providers
  - crawl.egress_proxies.attributes
attributes:
  check_mode:
    support: full
    details: Reports what would be created or deleted; calls no mutating provider operation.
  diff_mode:
    support: full
    details:
      - The instance that appears (created) or disappears (deleted), in check mode too, with
        C(name), C(provider), C(id), C(placement) (the fields that are set) and C(port) as the task
        gives them; the side where it does not exist is an empty mapping.
      - Credentials added or rotated on an existing instance show that instance on both sides,
        C(auth) saying what changed (never a credential).
      - The single form returns one C(before)/C(after) pair; the batch form a list, one per
        item that changed. Cloud-init is never part of it.
seealso:
  - module: crawl.egress_proxies.proxy_info
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
  - name: Playbooks
    description: The ready playbooks and the proxy role built on this module.
    link: https://example.invalid/crawl/egress_proxies/blob/main/docs/playbooks.md
options:
  provider:
    description: Name of the configured provider (the C(name) of an entry of the providers file).
    type: str
  uid:
    description:
      - The owner's unique id (a Proxy resource's UID, or any stable unique string). Written on the
        instance as its ownership mark. Required when O(state=present).
      - A string of at most 253 characters, without leading or trailing whitespace or control
        characters (a mapping or list is refused, not turned into text).
    type: str
  name:
    description:
      - Instance name. Defaults to C(proxy-) plus 16 base32 characters of SHA-256(O(uid)).
    type: str
  id:
    description:
      - Provider id of an existing instance (as returned in RV(instance.id)), parsed by its
        provider before anything is touched.
      - With O(state=present), an id that names no instance is an error unless it is the id of
        the instance named by O(name) (or derived from O(uid)).
    type: str
  namespace:
    description: Namespace of the owning Proxy resource (used by the kubernetes provider).
    type: str
  proxy_name:
    description: Name of the owning Proxy resource (used by the kubernetes provider for the owner reference).
    type: str
  owner_reference:
    description:
      - Make the owning Proxy resource (O(namespace), O(proxy_name) and O(uid) as its UID) the
        controlling owner of the kubernetes provider's Pod, so Kubernetes deletes the Pod with
        the Proxy. Only for a O(uid) that is a real Proxy's UID (the controller's case); for
        any other uid Kubernetes garbage-collects the Pod at once. Other providers ignore it.
        Defaults to C(false).
    type: bool
    version_added: 0.2.0
  placement:
    description: Where the instance should run; each provider documents which fields it uses.
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
    description: Cloud-init user-data for the instance. Never logged nor returned.
    type: str
  port:
    description:
      - Port the proxy listens on. Defaults to C(3128).
      - A port cannot change in place - on an existing instance, another port fails C(permanent)
        naming both, with RV(instance.reason=PortFixedAtCreation) and nothing changed; delete the
        instance and create it again. Every provider records the port at creation (instances
        made before 0.3.0 by C(gcp), C(kubernetes), C(kvm) or C(kvm2) record none and are not checked).
    type: int
  auth:
    description:
      - Basic authentication for the proxy, on top of the provider's allowed source ranges (a
        client outside them is refused whatever it sends). Supported by every provider;
        C(gcp), C(kvm) and C(kvm2) add their own cloud-init part beside O(cloud_init) (in the
        VM's user-data, or the NoCloud seed's), which they then require (docs/auth.md).
      - Only a salted SHA-512 crypt hash reaches the instance (Squid's C(basic_ncsa_auth) checks
        it); the password is never logged nor returned.
      - On an existing instance the credentials are rotated in place (C(changed=true)); the
        C(kubernetes) provider cannot add them to a Pod created without them, and a C(gcp) VM's
        and a C(kvm)/C(kvm2) domain's are fixed at creation (other credentials fail, saying to
        replace the instance, with RV(instance.reason=CredentialsFixedAtCreation)).
        Omitting O(auth) leaves an existing instance's credentials as they are; to remove them,
        replace the instance. A client gets C(407) without valid credentials.
    type: dict
    version_added: 0.2.0
    suboptions:
      username:
        description:
          - User name, 1 to 64 characters, without C(:), whitespace or control characters.
        type: str
        required: true
      password:
        description:
          - Password, 1 to 256 characters, without control characters (newline, NUL, tab).
        type: str
        required: true
  state:
    description: Whether the instance should exist. Defaults to C(present).
    type: str
    choices: [present, absent]
  wait:
    description: Wait until the instance is Running (present) or gone (absent). Defaults to C(false).
    type: bool
  wait_timeout:
    description: Seconds to wait when O(wait) is set, more than 0 and at most 86400. Defaults to C(300).
    type: float
  invalid_items:
    description:
      - What an invalid item of O(instances) does.
      - V(fail_all) fails the run before anything is touched.
      - V(fail_item) reports that item as failed (error class C(permanent)) and converges the
        others, for callers whose items are independent (the controller).
      - Two items for the same instance (same provider and name, or same id) are all invalid.
    type: str
    choices: [fail_all, fail_item]
    default: fail_all
  result_stream:
    description:
      - >-
        Controller-internal. With O(instances), a pipe or FIFO to which each item's result is
        written as soon as that item finishes, one JSON line C({"index": N, "result": {...}}) per
        item (N counts from 0 in O(instances)' order, then on through the O(instance_stream) items;
        the result is the one RV(results) holds, which never carries a secret). The final
        RV(results) still answer every item.
      - Anything else (a regular file, a directory, a missing path) is refused before any item
        is touched; a reader that goes away does not fail the run.
    type: path
    version_added: 0.3.0
  instance_stream:
    description:
      - >-
        Controller-internal. With O(instances), a pipe or FIFO from which more items are read while
        the run works, one JSON object per line with the fields of an O(instances) item (the
        top-level options are their defaults, as for a listed item), until end of file (the
        writer closes it). Each item is started as soon as its line is read; the run ends once
        end of file was read and every item (and every followed item, O(follow)) finished.
      - >-
        Every line is one item (an empty line too; a last line without newline at end of file
        as well), numbered after O(instances) - line k (from 0) has the index N + k, N being the
        number of O(instances) items, in O(result_stream) and in RV(results). It is checked as strictly as a listed item, and an
        item naming an instance an earlier item of the run names is invalid. An invalid line is
        a failed item (C(permanent)) whose message names the field as C(instance_stream[k].<field>);
        a line that is not a JSON object fails as C(instance_stream[k]: not a JSON object), its
        text never quoted; the lines after it are read as usual. Values the spec marks secret
        (O(cloud_init), O(auth.password)) are masked in the output from the moment they are read.
      - >-
        Only with O(invalid_items=fail_item) (an item read after work began cannot be held back
        with the others). Anything but an existing pipe or FIFO is refused before any item is
        touched.
    type: path
    version_added: 0.3.0
  follow:
    description:
      - >-
        With O(instances), the seconds (0, off, to 600) for which an item whose instance is still
        starting (state C(Provisioning)) after its create is read again in the same run (a second
        later, then every 2 seconds, a bounded number a second, the oldest first). Its result (and
        its O(result_stream) line) is then given as soon as the instance is no longer starting, or
        when the window ends, with the last state read.
      - Unlike O(wait), following holds none of the O(concurrency) slots, and a window that ends
        is no failure. Items with O(wait), O(state=absent) items and check mode are not followed.
        A read that fails keeps the item's last result.
      - Meant for the controller, whose Proxies are then Ready as their instances come up, without
        waiting for another run to poll them.
    type: float
    default: 0
    version_added: 0.3.0
  force:
    description:
      - With O(state=absent), delete an instance of this installation even when its ownership uid
        differs from O(uid). Without it such an instance is a permanent failure and is left alone.
      - Never deletes an instance without the collection's marks (no uid or installation mark) or
        one of another installation, whatever this is set to. Defaults to C(false).
    type: bool
    version_added: 0.2.0
  instances:
    description:
      - The batch form. Each item takes the per-instance options above; unset ones inherit the
        top-level value. All items are validated before any is touched (the items of
        O(instance_stream) each as its line is read).
    type: list
    elements: dict
    suboptions:
      provider:
        description: See O(provider).
        type: str
      uid:
        description: See O(uid).
        type: str
      name:
        description: See O(name).
        type: str
      id:
        description: See O(id).
        type: str
      namespace:
        description: See O(namespace).
        type: str
      proxy_name:
        description: See O(proxy_name).
        type: str
      owner_reference:
        description: See O(owner_reference).
        type: bool
        version_added: 0.2.0
      placement:
        description: See O(placement).
        type: dict
        suboptions:
          region:
            description: Region.
            type: str
          zone:
            description: Zone or host.
            type: str
          machine_type:
            description: Machine type.
            type: str
          image:
            description: Image.
            type: str
      cloud_init:
        description: See O(cloud_init).
        type: str
      port:
        description: See O(port).
        type: int
      auth:
        description: See O(auth).
        type: dict
        version_added: 0.2.0
        suboptions:
          username:
            description: User name.
            type: str
            required: true
          password:
            description: Password.
            type: str
            required: true
      state:
        description: See O(state).
        type: str
        choices: [present, absent]
      wait:
        description: See O(wait).
        type: bool
      wait_timeout:
        description: See O(wait_timeout).
        type: float
      force:
        description: See O(force).
        type: bool
        version_added: 0.2.0
"""

EXAMPLES = r"""
- name: One proxy on the local provider, waiting until it serves
  crawl.egress_proxies.proxy_instance:
    providers_file: /etc/egress-proxies/providers.yaml
    provider: local
    uid: 6f1c7c1e-5d07-4a0e-9b0e-1b2f3c4d5e6f
    wait: true
  register: proxy

- name: A fleet in one run (each item inherits provider, port and wait)
  crawl.egress_proxies.proxy_instance:
    provider: local
    wait: true
    instances:
      - uid: fleet-a-0
      - uid: fleet-a-1
      - uid: fleet-a-2
        port: 8080

- name: A proxy that asks for credentials (rotated in place when they change)
  crawl.egress_proxies.proxy_instance:
    provider: local
    uid: 6f1c7c1e-5d07-4a0e-9b0e-1b2f3c4d5e6f
    auth:
      username: crawler
      password: "{{ vault_proxy_password }}"
    wait: true

- name: Remove a proxy by its provider id
  crawl.egress_proxies.proxy_instance:
    provider: local
    id: "{{ proxy.instance.id }}"
    state: absent
    wait: true
"""

RETURN = r"""
instance:
  description: The instance (single form). On failure, what is known of it (at least the id when one exists).
  returned: when O(instances) is not used
  type: dict
  sample: {"id": "local/proxy-a3k2m4n5p6q7r8s9", "name": "proxy-a3k2m4n5p6q7r8s9", "uid": "0f7c1a52-7d0e-4c55-9d1e-3b2f0c6a8e11",
    "state": "Running", "ip": "127.88.0.1", "created_at": "2026-12-01T16:17:31.943680+00:00", "installation": "default", "provider": "local",
    "changed": true, "failed": false}
  contains: &instance_fields
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
    changed:
      description: Whether this instance was (or, in check mode, would be) created or deleted.
      type: bool
      sample: true
    failed:
      description: Whether this instance failed (the task then fails too).
      type: bool
      sample: false
    reason:
      description:
        - On some failures, why, for a caller that acts on it. C(CredentialsFixedAtCreation) when
          the instance's credentials were fixed at its creation (C(gcp), C(kvm), C(kvm2)) and other ones
          were asked for; only a new instance can have them (the controller then replaces it).
          C(PortFixedAtCreation) when the instance listens on another port than O(port) asked for;
          only a new instance can have it (the controller then replaces it).
          C(HostNotConfigured) when the id names a C(kvm)/C(kvm2) host the provider's config no longer
          has; the instance cannot be reached, so it is not read (put the host back).
          C(AddressInUse) (transient, C(local)) when another process listens on the instance's address
          and port, so Squid cannot start there; the message names the holder.
        - On an O(state=absent) success, C(HostNotConfigured) says the id was released without
          being reached (its host left the config; a warning says so too); with the host back,
          M(crawl.egress_proxies.proxy_gc) collects the instance, whose owner is then gone.
      type: str
      returned: on such a failure, or on such a release
      sample: CredentialsFixedAtCreation
results:
  description:
    - One entry per item of O(instances), in order, then one per item read from O(instance_stream),
      in the order of its lines.
  returned: when O(instances) is used
  type: list
  elements: dict
  sample:
    - {"id": "local/proxy-a3k2m4n5p6q7r8s9", "name": "proxy-a3k2m4n5p6q7r8s9", "uid": "0f7c1a52-7d0e-4c55-9d1e-3b2f0c6a8e11",
       "state": "Running", "ip": "127.88.0.1", "created_at": "2026-12-01T16:17:31.943680+00:00", "installation": "default", "provider": "local",
          "changed": true, "failed": false}
    - {"id": "", "name": "proxy-s2ckf2mkzfbrtjqb", "uid": " bad", "provider": "local", "state": "", "changed": false, "failed": true,
       "error_class": "permanent", "msg": "instances[1].uid: ' bad' has leading or trailing whitespace"}
  contains:
    <<: *instance_fields
    error_class:
      description: On failure, C(not_found), C(quota_exceeded), C(transient) or C(permanent).
      type: str
      sample: permanent
    msg:
      description: On failure, what failed, naming the item's field.
      type: str
      sample: "instances[1].uid: ' bad' has leading or trailing whitespace"
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

from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import (
    INSTANCE_OPTIONS,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.proxy_module import ProxyModule
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import instances


def argument_spec() -> dict:
    spec = dict(INSTANCE_OPTIONS)
    spec["instances"] = {"type": "list", "elements": "dict", "options": dict(INSTANCE_OPTIONS)}
    spec["invalid_items"] = {"type": "str", "choices": ["fail_all", "fail_item"], "default": "fail_all"}
    spec["result_stream"] = {"type": "path"}
    spec["instance_stream"] = {"type": "path"}
    spec["follow"] = {"type": "float", "default": 0.0}
    return spec


def main() -> None:
    ProxyModule(argument_spec(), supports_check_mode=True).run(instances.run)


if __name__ == "__main__":
    main()
