"""A stand-in ``awx.awx`` collection for running docs/awx.md's playbooks without an AWX.

The awx.awx collection is not installed here and no AWX runs, so the modules the docs use are
replaced by ones that declare (a subset of) the argument spec awx.awx documents for them and
return the arguments they got: everything the playbook computes (loops, lookups, filters) runs
for real, and Ansible's own argument validation rejects a name or a type awx.awx would reject.
"""

from __future__ import annotations

import pathlib
import pprint

_CONTROLLER = {
    "controller_host": {},
    "controller_username": {},
    "controller_password": {"no_log": True},
    "controller_oauthtoken": {"no_log": True},
    "validate_certs": {"type": "bool"},
}

# The options awx.awx documents for each module the docs use (awx.awx 24.x).
SPECS = {
    "credential_type": {
        "name": {"required": True},
        "new_name": {},
        "description": {},
        "kind": {"choices": ["ssh", "vault", "net", "scm", "cloud", "insights"]},
        "inputs": {"type": "dict"},
        "injectors": {"type": "dict"},
        "state": {"choices": ["present", "absent", "exists"], "default": "present"},
    },
    "job_template": {
        "name": {"required": True},
        "new_name": {},
        "description": {},
        "organization": {},
        "job_type": {"choices": ["run", "check"]},
        "inventory": {},
        "project": {},
        "playbook": {},
        "credentials": {"type": "list", "elements": "str", "aliases": ["credential"]},
        "execution_environment": {},
        "extra_vars": {"type": "dict"},
        "ask_variables_on_launch": {"type": "bool", "aliases": ["ask_extra_vars"]},
        "ask_inventory_on_launch": {"type": "bool"},
        "survey_enabled": {"type": "bool"},
        "survey_spec": {"type": "dict"},
        "state": {"choices": ["present", "absent", "exists"], "default": "present"},
    },
}

_MODULE = '''#!/usr/bin/python
"""Stand-in for awx.awx.%(name)s: validates its arguments and echoes them."""
from ansible.module_utils.basic import AnsibleModule

SPEC = %(spec)s


def main():
    module = AnsibleModule(argument_spec=SPEC, supports_check_mode=True)
    module.exit_json(changed=True, arguments=module.params)


if __name__ == "__main__":
    main()
'''


def install(root: pathlib.Path) -> pathlib.Path:
    """Write the stand-in collection under ``root``; returns the collections path to prepend."""
    modules = root / "ansible_collections" / "awx" / "awx" / "plugins" / "modules"
    modules.mkdir(parents=True)
    for name, spec in SPECS.items():
        text = _MODULE % {"name": name, "spec": pprint.pformat({**spec, **_CONTROLLER})}
        (modules / ("%s.py" % name)).write_text(text)
    (root / "ansible_collections" / "awx" / "awx" / "galaxy.yml").write_text(
        "namespace: awx\nname: awx\nversion: 0.0.0\nreadme: README.md\nauthors: [test]\n"
    )
    return root
