# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The attributes every module of the collection documents (check mode, diff mode, platform), as
ansible-core's own action_common_attributes fragment words them; each module sets its support
and says in details what the mode does for it."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description:
      Will return details on what has changed (or possibly needs changing in --diff mode), when in diff mode.
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
    details:
      - Runs on the host that runs the module (usually the Ansible controller or an execution
        environment), which reaches the provider's backend; Python 3.11 or later.
"""
