"""A stand-in ``awx.awx`` collection for running docs/awx.md's playbooks without an AWX.

The awx.awx collection is not installed here and no AWX runs, so its ``credential_type`` module
is replaced by one that declares the argument spec awx.awx documents for it and returns the
arguments it got: everything the playbook computes (loops, lookups, filters) runs for real, and
Ansible's own argument validation checks the names and types the documentation passes.
"""

from __future__ import annotations

import pathlib

_CREDENTIAL_TYPE = '''#!/usr/bin/python
"""Stand-in for awx.awx.credential_type: validates its arguments and echoes them."""
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(required=True),
            new_name=dict(),
            description=dict(),
            kind=dict(choices=["ssh", "vault", "net", "scm", "cloud", "insights"]),
            inputs=dict(type="dict"),
            injectors=dict(type="dict"),
            state=dict(choices=["present", "absent", "exists"], default="present"),
            controller_host=dict(),
            controller_username=dict(),
            controller_password=dict(no_log=True),
            controller_oauthtoken=dict(no_log=True),
            validate_certs=dict(type="bool"),
        ),
        supports_check_mode=True,
    )
    module.exit_json(changed=True, arguments=module.params)


if __name__ == "__main__":
    main()
'''


def install(root: pathlib.Path) -> pathlib.Path:
    """Write the stand-in collection under ``root``; returns the collections path to prepend."""
    modules = root / "ansible_collections" / "awx" / "awx" / "plugins" / "modules"
    modules.mkdir(parents=True)
    (modules / "credential_type.py").write_text(_CREDENTIAL_TYPE)
    (root / "ansible_collections" / "awx" / "awx" / "galaxy.yml").write_text(
        "namespace: awx\nname: awx\nversion: 0.0.0\nreadme: README.md\nauthors: [test]\n"
    )
    return root
