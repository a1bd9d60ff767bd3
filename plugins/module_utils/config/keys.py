# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The keys of the providers file's shape, named once.

``config`` validates the file with them (an unknown key is a problem naming its path), and the
controller's own first check of a new version of the file (its ``providers_config``) refuses the
same unknown keys, never one the modules accept (``rateLimit``). Standard library only: the
controller imports it (docs/architecture.md, import rule 11).
"""

from __future__ import annotations

TOP_LEVEL_KEYS = ("installation", "providers")
ENTRY_KEYS = ("name", "type", "rateLimit")  # besides the block named after the entry's type
