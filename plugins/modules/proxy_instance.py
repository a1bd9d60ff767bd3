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
attributes:
  check_mode:
    support: full
    description: Reports what would be created or deleted; calls no mutating provider operation.
  diff_mode:
    support: none
    description: Results describe the instances; there is no before/after diff.
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
    description: Port the proxy listens on. Defaults to C(3128).
    type: int
  auth:
    description:
      - Basic authentication for the proxy, on top of the provider's allowed source ranges (a
        client outside them is refused whatever it sends). Supported by the C(local) and
        C(kubernetes) providers; C(gcp), C(kvm) and C(kvm2) refuse it before anything is touched
        (docs/auth.md).
      - Only a salted SHA-512 crypt hash reaches the instance (Squid's C(basic_ncsa_auth) checks
        it); the password is never logged nor returned.
      - On an existing instance the credentials are rotated in place (C(changed=true)); the
        C(kubernetes) provider cannot add them to a Pod created without them (a replacement).
        Omitting O(auth) leaves an existing instance's credentials as they are; to remove them,
        replace the instance. A client gets C(407) without valid credentials.
    type: dict
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
  force:
    description:
      - With O(state=absent), delete an instance of this installation even when its ownership uid
        differs from O(uid). Without it such an instance is a permanent failure and is left alone.
      - Never deletes an instance without the collection's marks (no uid or installation mark) or
        one of another installation, whatever this is set to. Defaults to C(false).
    type: bool
  instances:
    description:
      - The batch form. Each item takes the per-instance options above; unset ones inherit the
        top-level value. All items are validated before any is touched.
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
  contains:
    id:
      description: Provider id, self-contained (location included).
      type: str
      sample: local/proxy-a3k2m4n5p6q7r8s9
    name:
      description: Instance name.
      type: str
    uid:
      description: Ownership mark read back from the backend.
      type: str
    state:
      description: C(Provisioning), C(Running), C(Stopped), C(Terminated), or C(absent).
      type: str
    ip:
      description: Address of the proxy; set only when Running.
      type: str
    created_at:
      description: Creation time read back from the backend (ISO 8601), empty when unknown.
      type: str
    provider:
      description: Configured provider name.
      type: str
results:
  description: One entry per item of O(instances), in order, with the keys of RV(instance) plus C(changed), C(failed), and on failure C(error_class) and C(msg).
  returned: when O(instances) is used
  type: list
  elements: dict
error_class:
  description: Class of the failure.
  returned: failure
  type: str
  sample: transient
telemetry:
  description: One record per provider call (op, provider, class, duration_seconds).
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.crawl.egress_proxies.plugins.module_utils import instances
from ansible_collections.crawl.egress_proxies.plugins.module_utils.args_common import INSTANCE_OPTIONS
from ansible_collections.crawl.egress_proxies.plugins.module_utils.proxy_module import ProxyModule


def argument_spec() -> dict:
    spec = dict(INSTANCE_OPTIONS)
    spec["instances"] = {"type": "list", "elements": "dict", "options": dict(INSTANCE_OPTIONS)}
    spec["invalid_items"] = {"type": "str", "choices": ["fail_all", "fail_item"], "default": "fail_all"}
    return spec


def main() -> None:
    ProxyModule(argument_spec(), supports_check_mode=True).run(instances.run)


if __name__ == "__main__":
    main()
