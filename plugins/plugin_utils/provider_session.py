# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The providers of a controller-side plugin: what ``ProxyModule`` gives the runners, minus Ansible's module.

The inventory plugin runs in the ``ansible-inventory`` (or ``ansible-playbook``) process, not as
a module, so it has no ``AnsibleModule``. This session stands in for ``ProxyModule`` towards the
runner ``inventory.run`` (the code behind ``proxy_info``): the same configuration
(``providers_file.resolve``), the same observed providers (``registry.build``), one ``list_by_tag`` per
provider with a ``Deadline`` of ``timeout`` seconds each. Nothing is listed here that
``proxy_info`` would not list, and no backend is reached in any other way.
"""

from __future__ import annotations

import contextlib
import logging

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import UsageError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.proxy_module import (
    PROVIDER_LOGGER,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import inventory
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.batch import DEFAULT_CONCURRENCY
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.observe import Telemetry


class _Warnings:
    """Stands in for ``AnsibleModule.warn``: the runner's warnings are kept, the plugin reports."""

    def __init__(self):
        self.messages = []

    def warn(self, msg: str) -> None:
        self.messages.append(msg)


class ProviderSession:
    """The configured providers ``names`` (all when empty), built on first use, closed by ``close``."""

    def __init__(self, providers_config: providers_file.ProvidersConfig, names=(), timeout: float = 120.0):
        unknown = [n for n in names if n not in providers_config.names()]
        if unknown:
            raise UsageError("providers: %s" % "; ".join(providers_config.not_configured(n) for n in unknown))
        self.config = providers_config
        self.names = tuple(names) or providers_config.names()
        self.params = {"ids": None, "provider": None, "timeout": timeout, "concurrency": DEFAULT_CONCURRENCY}
        self.module = _Warnings()
        self.telemetry = Telemetry()
        self._built = {}

    def selected_provider(self):
        return None  # the subset is ``names``: ``providers()`` answers only those

    def provider(self, name: str):
        if name not in self._built:
            self._built[name] = registry.build(
                self.config.find(name), self.config.installation, self.telemetry
            )
        return self._built[name]

    def providers(self, only=None) -> dict:
        return {n: self.provider(n) for n in ([only] if only else self.names)}

    def type_of(self, name: str) -> str:
        return self.config.find(name).type

    def close(self) -> None:
        for name, provider in self._built.items():
            try:
                provider.close()
            except Exception as exc:  # closing must not mask the listing
                self.module.warn("closing provider %s failed: %s" % (name, exc))


class _LogLines(logging.Handler):
    def __init__(self, sink):
        super().__init__(logging.DEBUG)
        self.sink = sink

    def emit(self, record):
        self.sink("%s %s" % (record.levelname, record.getMessage()))


@contextlib.contextmanager
def _provider_log(sink):
    """The providers' log lines go to ``sink`` for the run (as ``debug_log`` does for a module),
    never to stderr through Python's last-resort handler."""
    logger = logging.getLogger(PROVIDER_LOGGER)
    handler = _LogLines(sink)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def list_instances(
    providers_config: providers_file.ProvidersConfig, names=(), timeout: float = 120.0, log=None
) -> dict:
    """``proxy_info``'s listing of ``names``: ``{instances, errors, types, warnings}``.

    ``types`` maps each listed provider to its type; ``errors`` holds one entry per provider
    whose list failed (provider, error_class, msg), never an empty list in its place. ``log``
    receives the providers' log lines (they never hold secrets: docs/modules.md)."""
    session = ProviderSession(providers_config, names, timeout)
    with _provider_log(log or (lambda line: None)):
        try:
            result = inventory.run(session)
        finally:
            session.close()
    closing = [m for m in session.module.messages if m.startswith("closing provider")]
    return {
        "instances": result["instances"],
        "errors": result["errors"],
        "types": {n: session.type_of(n) for n in session.names},
        "warnings": closing,
    }
