#!/usr/bin/python
# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: kube_apply
short_description: Apply Kubernetes objects with server-side apply and wait until they are ready
version_added: 0.1.0
description:
  - Applies a list of Kubernetes objects in order with server-side apply (O(state=present)), or
    deletes them in reverse order (O(state=absent)). Used by the C(crawl.egress_proxies.controller)
    role to install the controller; it needs only the C(kubernetes) Python client, not the
    C(kubernetes.core) collection nor C(kubectl).
  - Idempotent. C(changed) is true only when the API server stored a change.
  - With O(wait), a CustomResourceDefinition must be Established and a Deployment rolled out
    (updated, available, no old replica) before the next object is applied.
  - Results name each object but never return its body, so a Secret's data stays out of the output
    (set C(no_log) on the task, since its data is a module argument).
author:
  - egress-proxies maintainers (@crawl)
attributes:
  check_mode:
    support: full
    description: A server-side dry run; C(changed) says whether the live object would change.
  diff_mode:
    support: none
    description: No diff is returned.
options:
  definitions:
    description: The objects, each a mapping with C(apiVersion), C(kind) and C(metadata.name).
    type: list
    elements: dict
    required: true
  state:
    description: Whether the objects should exist.
    type: str
    choices: [present, absent]
    default: present
  kubeconfig:
    description:
      - Path of a kubeconfig file. Without it and without O(context), the default kubeconfig
        (E(KUBECONFIG) or C(~/.kube/config)) is used, and failing that the in-cluster service account.
    type: path
  context:
    description: Context of the kubeconfig to use.
    type: str
  field_manager:
    description: The field manager of the server-side apply.
    type: str
    default: egress-proxies
  force_conflicts:
    description: Take over fields another manager set (as C(kubectl apply --server-side --force-conflicts)).
    type: bool
    default: true
  wait:
    description: Wait for CRDs to be Established, Deployments to be rolled out, deleted objects to be gone.
    type: bool
    default: true
  wait_timeout:
    description: Seconds to wait for each object.
    type: float
    default: 300
requirements:
  - python >= 3.11
  - kubernetes >= 29
"""

EXAMPLES = r"""
- name: Install a ConfigMap and a Deployment, waiting for the rollout
  crawl.egress_proxies.kube_apply:
    kubeconfig: /etc/egress-proxies/admin.kubeconfig
    definitions:
      - "{{ lookup('ansible.builtin.file', 'configmap.yaml') | from_yaml }}"
      - "{{ lookup('ansible.builtin.file', 'deployment.yaml') | from_yaml }}"
"""

RETURN = r"""
objects:
  description: One entry per definition, in the order given.
  returned: always
  type: list
  elements: dict
  contains:
    kind:
      description: The object's kind.
      type: str
    name:
      description: The object's name.
      type: str
    namespace:
      description: The object's namespace, empty for a cluster-scoped object.
      type: str
    changed:
      description: Whether this object was (or, in check mode, would be) changed.
      type: bool
    action:
      description: C(created), C(updated), C(unchanged), C(deleted) or C(absent).
      type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.crawl.egress_proxies.plugins.module_utils import kube_apply


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "definitions": {"type": "list", "elements": "dict", "required": True},
            "state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "kubeconfig": {"type": "path"},
            "context": {"type": "str"},
            "field_manager": {"type": "str", "default": "egress-proxies"},
            "force_conflicts": {"type": "bool", "default": True},
            "wait": {"type": "bool", "default": True},
            "wait_timeout": {"type": "float", "default": 300},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        objects = kube_apply.run(
            p["definitions"],
            state=p["state"],
            kubeconfig=p["kubeconfig"],
            context=p["context"],
            field_manager=p["field_manager"],
            force=p["force_conflicts"],
            wait=p["wait"],
            wait_timeout=p["wait_timeout"],
            check_mode=module.check_mode,
        )
    except kube_apply.ApplyError as exc:
        module.fail_json(msg=str(exc), objects=[])
    module.exit_json(changed=any(o["changed"] for o in objects), objects=objects)


if __name__ == "__main__":
    main()
