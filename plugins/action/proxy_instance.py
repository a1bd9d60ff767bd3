# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The action of ``proxy_instance``: run the module directly from the collection on a local connection.

See plugins/plugin_utils/direct_module.py for why and when; elsewhere it is ansible-core's path.
"""

from __future__ import annotations

from ansible_collections.crawl.egress_proxies.plugins.plugin_utils.direct_module import DirectModuleAction


class ActionModule(DirectModuleAction):
    """``proxy_instance`` as any module, minus the AnsiballZ zip where the collection is local."""
