"""Makes the crawl.egress_proxies collection's module_utils importable, the way ansible finds it.

The rules the controller and the modules share (instance names, shard hashing, apportionment,
...) live once, in the collection's pure module_utils (docs/architecture.md, import rule 11).
The collection is always installed beside the controller (docs/controller.md), so this module,
on its first import, sets up ansible-core's own collection loader with ansible's configured
collection paths (``ANSIBLE_COLLECTIONS_PATH``, or ``collections_path`` in ansible.cfg): the
controller imports the same collection ansible-playbook runs, and no path is searched by hand.

Every controller module that imports module_utils imports this one first; the package's
``__init__`` does not, because the fork server (runs/fork_server.py) must read ansible's
configuration only after it has adopted its first run's environment.
"""

from __future__ import annotations

import importlib.util
import sys

COLLECTION = "ansible_collections.crawl.egress_proxies"


class CollectionNotFound(ImportError):
    """The collection is not in any of ansible's collection paths; the message is one line."""


def _configure() -> None:
    """Installs ansible-core's collection finder and checks that it finds the collection.

    Nothing is installed when this process already imports ``ansible_collections`` some other
    way (ansible's finder set up by an ansible process, or a path on ``sys.path`` as
    tests/conftest.py sets it): one package must come through one loader, and ansible's finder
    refuses a collection package that another loader imported ("collection metadata was not
    loaded")."""
    from ansible import constants
    from ansible.plugins.loader import init_plugin_loader
    from ansible.utils.collection_loader import AnsibleCollectionConfig

    if AnsibleCollectionConfig.collection_finder is None and "ansible_collections" not in sys.modules:
        init_plugin_loader()
    try:
        found = importlib.util.find_spec(COLLECTION) is not None
    except ModuleNotFoundError:  # no ansible_collections.crawl at all
        found = False
    if not found:
        raise CollectionNotFound(
            "the crawl.egress_proxies collection is not in ansible's collections path %s "
            "(set ANSIBLE_COLLECTIONS_PATH, or collections_path in ansible.cfg, to the directory "
            "that holds ansible_collections/crawl/egress_proxies)" % ":".join(constants.COLLECTIONS_PATHS)
        )


_configure()
