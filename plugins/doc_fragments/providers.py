# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Options every module shares: where the providers come from, and the run's limits.
Kept in step with plugins/module_utils/module_glue/args_common.py (PROVIDERS_ARGS)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  providers_file:
    description:
      - Path of the providers file (YAML, C(providers:) list of C({name, type, <type block>})).
      - When neither this nor O(providers) is set, the file named by the environment variable
        E(EGRESS_PROXIES_PROVIDERS_FILE) on the host that runs the module is used.
      - See docs/configuration.md for the schema; every problem is reported with its exact path.
    type: path
  providers:
    description:
      - The providers inline, in the same schema as the file's C(providers) list.
      - Mutually exclusive with O(providers_file).
      - A kubernetes block's C(apiKey) is masked in everything the module returns; prefer the
        E(K8S_AUTH_API_KEY) variable (or a providers file) to writing a token in a playbook.
    type: list
    elements: dict
  installation:
    description:
      - The installation id written as the C(proxy-operator-install) mark on every instance and
        required of every instance garbage collection touches.
      - Overrides the C(installation) key of the providers file, which defaults to C(default).
      - Two installations sharing a backend must use different ids.
    type: str
  timeout:
    description:
      - Seconds allowed for the provider calls of one instance (or one provider), each call
        bounded by it. A call that runs past it fails with error class C(transient).
      - More than 0 and at most 86400; C(nan) and C(inf) are refused (error class C(permanent)).
    type: float
    default: 120.0
  concurrency:
    description:
      - How many instances (or providers) are worked on at once in one module run.
      - A whole number from 1 to 256.
    type: int
    default: 16
requirements:
  - python >= 3.11
  - pydantic >= 2.7
notes:
  - A kubernetes block takes kubernetes.core's connection options (C(host), C(apiKey), C(caCert),
    C(clientCert), C(clientKey), C(validateCerts), C(proxy), C(kubeconfig), C(context)); each
    one it leaves out is read from its E(K8S_AUTH_*) variable, as kubernetes.core does
    (docs/kubernetes-provider.md, Connecting to the cluster).
  - Failures return C(error_class), one of C(not_found), C(quota_exceeded), C(transient) (safe to
    retry) and C(permanent) (fix the input or the configuration first). Every invalid argument,
    also one core Ansible refuses before the module runs, is C(permanent).
  - Every result carries C(telemetry), one record per provider call (op, provider, class,
    duration_seconds), which the controller turns into metrics.
"""
