# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The providers file: parsing and validation.

Shape::

    installation: prod-eu        # optional, the installation mark (default "default")
    providers:
      - name: local              # a DNS label, unique; what Proxy.spec.provider refers to
        type: local              # one of the registered types
        local: {stateDir: ...}   # the block named after the type (optional when all defaults)

Every problem is reported with the exact path to fix (``providers[2].kvm.hosts[0].name: ...``),
all problems at once. Parsing never contacts a backend. The same schema serves the providers
file, the modules' inline ``providers`` option and the controller's ConfigMap.
"""

from __future__ import annotations

import dataclasses
import os

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import yaml_reader
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config.base import (
    check_dns_label,
    format_loc,
    format_validation_error,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config.keys import (
    ENTRY_KEYS,
    TOP_LEVEL_KEYS,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import rate_limit
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.names import DEFAULT_INSTALLATION
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.pydantic_compat import (
    ValidationError,
    require_pydantic,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt, label

ENV_PROVIDERS_FILE = "EGRESS_PROXIES_PROVIDERS_FILE"


@dataclasses.dataclass(frozen=True)
class ProviderSpec:
    name: str
    type: str
    block: object
    rate_limit: object = None  # rate_limit.RateLimit, shared by every process on the host


@dataclasses.dataclass(frozen=True)
class ProvidersConfig:
    installation: str
    providers: tuple
    source: str = "<inline>"

    def names(self) -> tuple:
        return tuple(p.name for p in self.providers)

    def not_configured(self, name: str) -> str:
        """The one wording for a provider name the configuration does not have."""
        return "provider %r is not configured (configured: %s)" % (name, ", ".join(self.names()) or "none")

    def find(self, name: str):
        for spec in self.providers:
            if spec.name == name:
                return spec
        return None


def parse(data, source: str = "<inline>") -> ProvidersConfig:
    """Validate a loaded document; raise ``ConfigError`` listing every problem with its path."""
    require_pydantic()
    problems = []
    if not isinstance(data, dict):
        problem = "<root>: must be a mapping with a 'providers' list"
        raise ConfigError(["%s: %s" % (source, problem) if source != "<inline>" else problem])
    for key in sorted(set(data) - set(TOP_LEVEL_KEYS)):
        problems.append("%s: unknown field (allowed: %s)" % (label(key), ", ".join(TOP_LEVEL_KEYS)))

    installation = data.get("installation", DEFAULT_INSTALLATION)
    if not isinstance(installation, str):
        problems.append("installation: must be a string")
        installation = DEFAULT_INSTALLATION
    else:
        try:
            check_dns_label(installation, "installation")
        except ValueError as exc:
            problems.append("installation: %s" % exc)

    entries = data.get("providers")
    specs = []
    if not isinstance(entries, list):
        problems.append("providers: must be a list of {name, type, <type block>}")
        entries = []
    seen = {}
    for index, entry in enumerate(entries):
        spec = _parse_entry(index, entry, problems)
        if spec is None:
            continue
        if spec.name in seen:
            problems.append(
                "providers[%d].name: duplicate provider name %r (also providers[%d])"
                % (index, spec.name, seen[spec.name])
            )
            continue
        seen[spec.name] = index
        problems.extend(_conflicts(index, spec, specs, seen))
        specs.append(spec)
    if problems:
        raise ConfigError(["%s: %s" % (source, p) if source != "<inline>" else p for p in problems])
    return ProvidersConfig(installation=installation, providers=tuple(specs), source=source)


def _conflicts(index: int, spec: ProviderSpec, earlier: list, seen: dict) -> list:
    """Settings of two providers of one type that cannot both hold (a block's ``conflict_with``)."""
    check = getattr(spec.block, "conflict_with", None)
    out = []
    for other in earlier:
        if other.type == spec.type and check is not None:
            problem = check(other.block)
            if problem:
                out.append(
                    "providers[%d].%s: %s of providers[%d] (%s)"
                    % (index, spec.type, problem, seen[other.name], other.name)
                )
    return out


def _parse_entry(index: int, entry, problems: list):
    here = ("providers", index)
    if not isinstance(entry, dict):
        problems.append("%s: must be a mapping with name and type" % format_loc(here))
        return None
    name, type_name = entry.get("name"), entry.get("type")
    ok = True
    if not isinstance(name, str) or not name:
        problems.append("%s.name: required, a DNS label" % format_loc(here))
        ok = False
    else:
        try:
            check_dns_label(name, "provider name")
        except ValueError as exc:
            problems.append("%s.name: %s" % (format_loc(here), exc))
            ok = False
    allowed_types = registry.type_names()
    provider_type = registry.lookup(type_name) if isinstance(type_name, str) else None
    if type_name is None:
        problems.append("%s.type: required, one of %s" % (format_loc(here), ", ".join(allowed_types)))
        ok = False
    elif provider_type is None:
        problems.append(
            "%s.type: unknown provider type %s (known: %s)"
            % (format_loc(here), excerpt(type_name), ", ".join(allowed_types))
        )
        ok = False
    for key in sorted(set(entry) - set(ENTRY_KEYS), key=str):
        if provider_type is not None and key == provider_type.name:
            continue
        if key in allowed_types:
            problems.append(
                "%s.%s: a %s block does not belong to a provider of type %r"
                % (format_loc(here), key, key, type_name)
            )
        else:
            problems.append("%s.%s: unknown field" % (format_loc(here), label(key)))
        ok = False
    limit = rate_limit.parse(entry.get("rateLimit"), "%s.rateLimit" % format_loc(here), problems)
    if entry.get("rateLimit") is not None and limit is None:
        ok = False
    if provider_type is None:
        return None
    raw_block = entry.get(provider_type.name)
    if raw_block is None:
        raw_block = {}
    if not isinstance(raw_block, dict):
        problems.append("%s.%s: must be a mapping" % (format_loc(here), provider_type.name))
        return None
    try:
        block = provider_type.block.model_validate(raw_block)
    except ValidationError as exc:
        problems.extend(format_validation_error(exc, (*here, provider_type.name)))
        return None
    return ProviderSpec(name=name, type=provider_type.name, block=block, rate_limit=limit) if ok else None


def load_file(path: str) -> ProvidersConfig:
    """Read and validate a providers file; a missing or unreadable file is a ``ConfigError``, and
    so is one another user could change (it names what root runs: helpers/path_trust.py)."""
    try:
        data = yaml_reader.load_file(path, "providers file", trusted=True)
    except yaml_reader.FileProblem as exc:
        raise ConfigError(["%s: %s" % (path, exc)]) from None
    return parse(data if data is not None else {}, source=path)


def resolve(providers_file: str | None, inline_providers, installation: str | None = None):
    """The module-level entry point: inline providers, else the file, else the env variable."""
    if inline_providers is not None and providers_file:
        raise ConfigError(["providers and providers_file are mutually exclusive"])
    if inline_providers is not None:
        doc = {"providers": inline_providers}
        if installation:
            doc["installation"] = installation
        return parse(doc)
    path = providers_file or os.environ.get(ENV_PROVIDERS_FILE)
    if not path:
        raise ConfigError(
            [
                "no providers configured: set providers_file, the inline providers option, "
                "or the %s environment variable" % ENV_PROVIDERS_FILE
            ]
        )
    config = load_file(path)
    if installation:
        check = parse({"installation": installation, "providers": []})
        config = dataclasses.replace(config, installation=check.installation)
    return config
