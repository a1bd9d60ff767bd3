# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The inventory plugin ``crawl.egress_proxies.proxies``: the managed proxies as inventory hosts.

It lists through the code behind ``proxy_info`` (plugins/plugin_utils/provider_session.py), so
the hosts are exactly what ``proxy_info`` would return, and turns each instance into a host
(plugins/plugin_utils/proxy_hosts.py). This file holds the documentation and the Ansible side:
options, the cache, warnings and errors, the constructed features.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: proxies
short_description: The egress proxies of the configured providers as inventory hosts
version_added: 0.1.0
description:
  - Lists every managed instance of this installation on the configured providers (or on those
    named in O(providers)), one list call per provider, exactly as M(crawl.egress_proxies.proxy_info)
    does, and makes each one a host, named by its instance name (C(proxy-) and 16 characters)
    unless O(hostnames) says otherwise.
  - Each host has C(ansible_host) set to its IP address (when it has one) and the host variable
    C(egress_proxies), a dictionary with C(id), C(name), C(uid), C(provider), C(type), C(state),
    C(ip), C(port), C(zone), C(created_at) and C(installation).
  - Every host is in the group C(proxies) and in one group per provider (C(provider_<name>)),
    provider type (C(type_<type>)), state (C(state_running), C(state_provisioning),
    C(state_stopped), C(state_terminated)) and zone (C(zone_<zone>), for gcp's zones and the
    kvm/kvm2 hosts); those groups are children of C(proxies). Characters not allowed in a group
    name (such as C(-)) become C(_).
  - A provider whose list fails is reported as a warning (its hosts are missing, the others are
    listed); with O(strict) it fails the inventory instead.
  - The source is a YAML file named C(proxies.yml), C(proxies.yaml), or ending in C(.proxies.yml)
    or C(.proxies.yaml), whose O(plugin) is C(crawl.egress_proxies.proxies).
  - Neither the providers file's secrets (key files, kubeconfigs, credentials) nor anything else
    but the fields above reach the inventory, its cache or its messages.
author:
  - egress-proxies maintainers (@crawl)
extends_documentation_fragment:
  - constructed
  - inventory_cache
requirements:
  - python >= 3.11
  - pydantic >= 2.7
  - the SDK of each listed provider type (see the collection's requirements.txt)
options:
  plugin:
    description: The name of this plugin; marks the file as this plugin's source.
    required: true
    type: str
    choices: [crawl.egress_proxies.proxies]
  providers_file:
    description:
      - Path of the providers file (the same file the modules read; docs/configuration.md).
      - Defaults to the file named by the environment variable E(EGRESS_PROXIES_PROVIDERS_FILE),
        which AWX's providers credential sets.
    type: path
    env:
      - name: EGRESS_PROXIES_PROVIDERS_FILE
  providers:
    description:
      - Names of the configured providers to list; all of them when empty.
      - A name the providers file does not configure fails the inventory.
    type: list
    elements: str
    default: []
  installation:
    description:
      - The installation whose instances are listed; overrides the providers file's
        C(installation) (default C(default)), as the modules' O(installation) option does.
    type: str
  timeout:
    description:
      - Seconds allowed for the list call of each provider (the providers are listed
        concurrently). A provider that does not answer in time is a failed provider.
    type: float
    default: 120.0
  port:
    description:
      - The port reported as C(egress_proxies.port). The providers do not read a proxy's port
        back from its backend, so this is the port your proxies were created with (the modules'
        default, 3128, unless you chose another); set a per-host value with O(compose) when they
        differ.
    type: int
    default: 3128
  hostnames:
    description:
      - How each host is named, as an ordered list of preferences; the first entry that yields a
        non-empty value names the host.
      - An entry is a field of the instance, C(name) (the instance name), C(uid) (its owner's
        uid), C(ip) (empty while it has no address) or C(id) (the provider id), or a Jinja2
        template that sees the host variable C(egress_proxies), such as
        C({{ egress_proxies.provider }}-{{ egress_proxies.uid }}). Anything else, an entry given
        twice or an empty list fails the source, naming the entry (C(hostnames[1])).
      - The instance name is always the last preference. When no entry yields a value, the host
        is named by its instance name, with a warning.
      - A name an earlier instance already holds (instances are taken provider by provider, in
        name order) is skipped for the next preference, with a warning naming both instances;
        an instance whose every preference is taken is left out, with a warning. With O(strict),
        either fails the source instead. No instance ever replaces another's host.
      - A template that fails (an undefined variable) yields nothing, with a warning; with
        O(strict) it fails the source.
    type: list
    elements: str
    default: [name]
    version_added: 0.2.0
seealso:
  - module: crawl.egress_proxies.proxy_info
  - module: crawl.egress_proxies.proxy_instance
"""

EXAMPLES = r"""
---
# inventory/egress.proxies.yml: every proxy of every provider in the providers file
plugin: crawl.egress_proxies.proxies
providers_file: /etc/egress-proxies/providers.yaml

---
# Only two providers, a shorter deadline, cached for ten minutes, and constructed groups
plugin: crawl.egress_proxies.proxies
providers: [gcp-eu, hv]
timeout: 30
cache: true
cache_plugin: ansible.builtin.jsonfile
cache_connection: /var/cache/ansible/egress-proxies
cache_timeout: 600
strict: true                 # a provider that cannot be listed fails the inventory
hostnames:                   # hosts named by their owner's uid, else by their instance name
  - uid
compose:
  proxy_url: "'http://' ~ egress_proxies.ip ~ ':' ~ egress_proxies.port"
groups:
  young: egress_proxies.created_at > '2026-01-01'
keyed_groups:
  - key: egress_proxies.installation
    prefix: installation

# ansible-inventory -i inventory/egress.proxies.yml --graph
# ansible-playbook -i inventory/egress.proxies.yml check_proxies.yml   # hosts: state_running
"""

from ansible.errors import AnsibleParserError
from ansible.inventory.group import to_safe_group_name
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible.release import __version__ as ansible_core_version

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.pydantic_compat import MissingLibrary
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import core_range, param_checks
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.excerpt import excerpt
from ansible_collections.crawl.egress_proxies.plugins.plugin_utils import (
    cached_listing,
    proxy_hosts,
    template_trust,
)
from ansible_collections.crawl.egress_proxies.plugins.plugin_utils.provider_session import list_instances

SOURCE_NAMES = ("proxies.yml", "proxies.yaml")
INT_OPTIONS = ("port",)  # the options of type int above


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "crawl.egress_proxies.proxies"

    def verify_file(self, path):
        if not super().verify_file(path):
            return False
        base = path.replace("\\", "/").rsplit("/", 1)[-1]
        return base in SOURCE_NAMES or base.endswith(tuple("." + n for n in SOURCE_NAMES))

    def parse(self, inventory, loader, path, cache=True):
        unsupported = core_range.problem(ansible_core_version)
        if unsupported:
            raise AnsibleParserError(unsupported)
        super().parse(inventory, loader, path, cache)
        self._check_ints(path)
        self._read_config_data(path)
        self._check_options(path)
        cache_key = self.get_cache_key(path)
        use_cache = self.get_option("cache") and cache  # false with --flush-cache / refresh_inventory
        update_cache = bool(self.get_option("cache")) and not cache
        listing = None
        if use_cache:
            try:
                listing = self._cache[cache_key]
            except KeyError:  # expired or never written
                update_cache = True
            else:
                listing = self._usable(listing, cache_key)
                update_cache = listing is None
        if listing is None:
            listing = self._list()
        if update_cache:
            self._cache[cache_key] = listing
        self._populate(listing)

    def _usable(self, listing, cache_key: str):
        """The cached ``listing``, or None (listed afresh, with a warning) when the entry is not
        this plugin's listing: an empty inventory from a foreign entry would look like no proxies."""
        found = cached_listing.problem(listing)
        if not found:
            return listing
        self.display.warning(
            "inventory cache entry %s is not this plugin's listing (%s): listed afresh" % (cache_key, found)
        )
        return None

    def _check_ints(self, path: str) -> None:
        """``port: .inf`` (or ``"inf"``) makes core's option conversion raise ``OverflowError``,
        reported without the option's name: refused here first, naming it (issue 40 §6)."""
        raw = self.loader.load_from_file(path)
        problems = (
            [param_checks.int_problem(raw.get(name), name) for name in INT_OPTIONS]
            if isinstance(raw, dict)
            else []
        )
        problems = [p for p in problems if p]
        if problems:
            raise AnsibleParserError("%s: %s" % (path, "; ".join(problems)))

    def _check_options(self, path: str) -> None:
        """The modules' rules for the options they share, before anything is listed or read from
        the cache: a negative ``timeout`` would only make every provider fail its list, a
        ``port`` out of range would be reported for every host."""
        problems = [
            param_checks.seconds(self.get_option("timeout"), "timeout"),
            param_checks.port(self.get_option("port"), "port"),
            proxy_hosts.hostnames_problem(self.get_option("hostnames")),
        ]
        problems = [p for p in problems if p]
        if problems:
            raise AnsibleParserError("%s: %s" % (path, "; ".join(problems)))

    def _list(self) -> dict:
        """The hosts and failed providers, as plain data (what the cache stores)."""
        providers_file = self.get_option("providers_file")
        if not providers_file:
            raise AnsibleParserError(
                "providers_file: required (or the %s environment variable)" % config.ENV_PROVIDERS_FILE
            )
        try:
            resolved = config.resolve(providers_file, None, self.get_option("installation"))
            listing = list_instances(
                resolved,
                self.get_option("providers"),
                float(self.get_option("timeout")),
                log=self.display.vvv,
            )
        except MissingLibrary as exc:
            raise AnsibleParserError(str(exc))
        except (errors.ConfigError, errors.UsageError, errors.ProviderError) as exc:
            raise AnsibleParserError(str(exc))
        port = int(self.get_option("port"))  # a plain int: the cache stores plain data
        return {
            "hosts": [
                proxy_hosts.host_record(i, listing["types"][i["provider"]], port)
                for i in listing["instances"]
            ],
            "errors": [
                {key: e[key] for key in ("provider", "error_class", "msg")} for e in listing["errors"]
            ],
            "warnings": listing["warnings"],
        }

    def _populate(self, listing: dict) -> None:
        strict = self.get_option("strict")
        failed = [
            "listing provider %s failed (%s): %s" % (e["provider"], e["error_class"], e["msg"])
            for e in listing["errors"]
        ]
        if failed and strict:
            raise AnsibleParserError("; ".join(failed))
        for message in failed + listing["warnings"]:
            self.display.warning(message)
        base = self.inventory.add_group(proxy_hosts.BASE_GROUP)
        # Groups and hosts are added in sorted order, which is the order ``--graph`` and
        # ``--list`` show them in (a provider lists its instances in no particular order).
        records = sorted(listing["hosts"], key=lambda r: (r["name"], r["provider"], r["uid"], r["id"]))
        groups = {
            self._group_name(prefix, value) for r in records for prefix, value in proxy_hosts.group_keys(r)
        }
        for group in sorted(groups):
            self.inventory.add_child(base, self.inventory.add_group(group))
        for record in records:
            self._add_host(base, record, strict)

    def _add_host(self, base: str, record: dict, strict: bool) -> None:
        name = self._host_name(record, strict)
        if name is None:
            return
        name = template_trust.literal(name, self.templar.is_possibly_template)
        self.inventory.add_host(name, group=base)
        plain = template_trust.literal(dict(record), self.templar.is_possibly_template)
        self.inventory.set_variable(name, proxy_hosts.HOSTVAR, plain)
        if record["ip"]:
            self.inventory.set_variable(name, "ansible_host", plain["ip"])
        for prefix, value in proxy_hosts.group_keys(record):
            self.inventory.add_child(self._group_name(prefix, value), name)
        variables = self.inventory.get_host(name).get_vars()
        self._set_composite_vars(self.get_option("compose"), variables, name, strict=strict)
        self._add_host_to_composed_groups(self.get_option("groups"), variables, name, strict=strict)
        self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, name, strict=strict)

    @staticmethod
    def _group_name(prefix: str, value: str) -> str:
        return to_safe_group_name("%s_%s" % (prefix, value), force=True, silent=True)

    def _host_name(self, record: dict, strict: bool):
        """The first of the ``hostnames`` candidates no other instance of this plugin holds yet, or
        None (the instance is left out, with a warning; with ``strict``, the source fails).

        A name taken by an earlier instance moves this one to its next candidate, with a warning
        naming both instances, so no instance ever replaces another's host silently."""
        preferences = self.get_option("hostnames")
        candidates = proxy_hosts.hostname_candidates(record, preferences, self._renderer(record, strict))
        who = "%s's instance %s" % (record["provider"], record["name"])
        taken = ""
        for label, candidate in candidates:
            known = self.inventory.get_host(candidate)
            holder = known.vars.get(proxy_hosts.HOSTVAR) if known is not None else None
            if holder is None:
                break
            if not taken:
                taken = "%s: host name %s (from %s) is already %s's instance %s" % (
                    who,
                    excerpt(candidate),
                    label,
                    holder["provider"],
                    holder["name"],
                )
            if strict:
                raise AnsibleParserError(taken)
        else:
            message = "%s; left out: no other entry of hostnames names it" % taken
            if strict:
                raise AnsibleParserError(message)
            self.display.warning(message)
            return None
        if taken:
            self.display.warning("%s; named %s (from %s)" % (taken, excerpt(candidate), label))
        elif label == "the instance name" and candidates[0][0] == label:
            self.display.warning("%s: no entry of hostnames yields a name; named by its instance name" % who)
        return candidate

    def _renderer(self, record: dict, strict: bool):
        """Renders a ``hostnames`` template with the host's ``egress_proxies`` variable. A template
        that fails yields nothing (the next entry is tried) with a warning; with ``strict`` it
        fails the source, naming the entry."""

        def render(index: int, template: str) -> str:
            self.templar.available_variables = {
                proxy_hosts.HOSTVAR: template_trust.literal(record, self.templar.is_possibly_template)
            }
            try:
                return self.templar.template(template_trust.template(template))
            except Exception as exc:  # any template error, as compose treats its expressions'
                message = "hostnames[%d]: %s failed for %s's instance %s: %s" % (
                    index,
                    excerpt(template),
                    record["provider"],
                    record["name"],
                    exc,
                )
                if strict:
                    raise AnsibleParserError(message)
                self.display.warning(message)
                return ""

        return render
