# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""The wrapper every module is built on: shared options, providers loading, one failure path.

Modules stay thin (documentation, an argument spec, a ``main`` that calls a runner in
module_utils). Runners raise; only this wrapper calls ``fail_json``, so the same runner code
serves playbooks, the controller and the unit tests. Provider logs are forwarded to the
module's log and, at ``-vvv`` and above, returned as ``debug_log`` (never secrets: providers
log the cloud-init byte count, not its content).
"""

from __future__ import annotations

import logging
import threading

from ansible.module_utils.ansible_release import __version__ as ansible_core_version
from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import UsageError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.pydantic_compat import MissingLibrary
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import core_range, param_checks
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue import arg_shapes
from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.args_common import (
    PROVIDERS_ARGS,
    PROVIDERS_MUTUALLY_EXCLUSIVE,
)
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry import tracing
from ansible_collections.crawl.egress_proxies.plugins.module_utils.telemetry.observe import Telemetry

PROVIDER_LOGGER = "crawl.egress_proxies"


class _ListHandler(logging.Handler):
    """The run's ``debug_log``; a line written inside a span names its trace and span, so it can
    be found beside the exported spans (telemetry/tracing.py)."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines = []

    def emit(self, record):
        trace_id, span_id = tracing.log_ids()  # emit runs in the logging thread: its span
        ids = " trace_id=%s span_id=%s" % (trace_id, span_id) if trace_id else ""
        self.lines.append("%s%s %s" % (record.levelname, ids, record.getMessage()))


def _spec_as_given(argument_spec: dict, names) -> dict:
    """``argument_spec`` with every option taken as given: no type, default, choices or
    suboptions, so nothing is converted or refused (``no_log`` kept); ``names`` (the options the
    task gave, an unknown one included) are accepted too."""
    spec = {name: {"type": "raw"} for name in names if not str(name).startswith("_ansible_")}
    spec.update({name: {"type": "raw", "no_log": bool(o.get("no_log"))} for name, o in argument_spec.items()})
    return spec


class _Module(AnsibleModule):
    """``AnsibleModule`` that keeps the parameters as given and classifies its own failures.

    Core Ansible's argument errors (an unknown option, a value not in ``choices``) fail before
    any runner exists; callers that branch on ``error_class`` (the controller does) get
    ``permanent`` for them too. The parameters as given (``raw_params``) let the modules refuse
    what Ansible would silently convert (a dict for a ``str``, ``true`` for an ``int``), and a
    list element that is not a mapping is reported naming its path (``arg_shapes``) instead of
    core's message. Public API only: the real spec is validated first (what validate-modules
    reads); the parameters as given come from a second ``AnsibleModule`` over the same arguments
    with every option typed ``raw`` (ansible-core reads a module's arguments once and parses
    them again for each instance).
    """

    def __init__(self, argument_spec: dict, **kwargs):
        self.raw_params = None
        self._validated = False
        try:
            super().__init__(argument_spec=argument_spec, **kwargs)
        except OverflowError:
            # core's check_type_int raises on an infinite number ("inf", ".inf") instead of
            # failing; the parameters are loaded by then, so the option is named from them as
            # given (``fail_json`` below puts arg_shapes' problem in the message).
            self.fail_json(msg="an integer option is infinite")
        self._validated = True
        self.raw_params = self._as_given()

    def _as_given(self) -> dict:
        """The options the task gave (a ``null`` one as not given), before any conversion."""
        if self.raw_params is None:
            spec = _spec_as_given(self.argument_spec, self.params)
            given = AnsibleModule(argument_spec=spec, supports_check_mode=True, no_log=True)
            self.raw_params = {k: v for k, v in given.params.items() if v is not None}
        return self.raw_params

    def fail_json(self, msg, **kwargs):
        if not self._validated:  # core's validation failed: a non-mapping element is named instead
            found = arg_shapes.problems(self.argument_spec, self._as_given())
            if found:  # the invocation as given too, not core's half-converted parameters
                msg = "; ".join(found)
                kwargs.setdefault("invocation", {"module_args": self._as_given()})
        kwargs.setdefault("error_class", errors.PERMANENT)
        super().fail_json(msg, **kwargs)


def common_problems(params: dict, raw: dict) -> list:
    """The shared options every module takes: ``timeout`` and ``concurrency``."""
    timeout, concurrency = (
        raw[key] if raw.get(key) is not None else params.get(key) for key in ("timeout", "concurrency")
    )
    problems = [param_checks.seconds(timeout, "timeout"), param_checks.count(concurrency, "concurrency")]
    return [p for p in problems if p]


def _secrets(specs) -> set:
    """The secret strings of the parsed blocks (a kubernetes block's ``apiKey``)."""
    return {s.block.api_key for s in specs if getattr(s.block, "api_key", None)}


def _inline_secrets(providers) -> set:
    """The ``apiKey`` values written in the inline ``providers`` option, before any parsing
    (a block that fails validation must not echo its token either)."""
    out = set()
    for item in providers or ():
        block = item.get("kubernetes") if isinstance(item, dict) else None
        if isinstance(block, dict) and isinstance(block.get("apiKey"), str) and block["apiKey"]:
            out.add(block["apiKey"])
    return out


class ProxyModule:
    """An ``AnsibleModule`` plus the configured providers, telemetry and log capture."""

    def __init__(self, argument_spec: dict, **kwargs):
        spec = dict(PROVIDERS_ARGS)
        spec.update(argument_spec)
        exclusive = list(kwargs.pop("mutually_exclusive", [])) + PROVIDERS_MUTUALLY_EXCLUSIVE
        self.module = _Module(argument_spec=spec, mutually_exclusive=exclusive, **kwargs)
        unsupported = core_range.problem(ansible_core_version)
        if unsupported:
            self.module.fail_json(msg=unsupported)
        self.params = self.module.params
        self.raw_params = self.module.raw_params
        self.module.no_log_values.update(_inline_secrets(self.params.get("providers")))
        self.check_mode = self.module.check_mode
        self.diff_mode = bool(self.module._diff)  # --diff: runners add a before/after "diff"
        self.telemetry = Telemetry()
        self._providers = {}
        self._providers_lock = threading.Lock()  # batch items ask from many threads at once
        self._config = None
        self._log = _ListHandler()
        logger = logging.getLogger(PROVIDER_LOGGER)
        logger.setLevel(logging.DEBUG)
        logger.addHandler(self._log)

    @property
    def config(self) -> config.ProvidersConfig:
        if self._config is None:
            self._config = config.resolve(
                self.params.get("providers_file"),
                self.params.get("providers"),
                self.params.get("installation"),
            )
            # A token from the file or K8S_AUTH_API_KEY: masked in anything the module returns.
            self.module.no_log_values.update(_secrets(self._config.providers))
        return self._config

    def provider(self, name: str):
        """The observed provider configured under ``name``; Permanent when it is not configured.

        One provider (hence one set of connections) per name for the whole run, also when the
        batch form's threads ask for it at the same time."""
        with self._providers_lock:
            return self._provider_locked(name)

    def _provider_locked(self, name: str):
        if name not in self._providers:
            spec = self.config.find(name)
            if spec is None:
                raise errors.permanent("create", name, "", self.config.not_configured(name))
            self._providers[name] = registry.build(spec, self.config.installation, self.telemetry)
        return self._providers[name]

    def selected_provider(self):
        """The ``provider`` option (``None`` for all), refused when it is not configured."""
        only = self.params.get("provider")
        if only and only not in self.config.names():
            raise UsageError("provider: %s" % self.config.not_configured(only))
        return only

    def checked_options(self, argument_spec: dict, given: dict, where: str) -> tuple:
        """Options Ansible never parsed (a batch item streamed in while the run works) converted
        and checked by core's argument spec (``arg_shapes.checked``): (the converted values, the
        problems, each naming ``<where>.<option>``). Their ``no_log`` values are masked in
        everything the module returns from now on, as core does for the options it parsed."""
        values, found, secrets = arg_shapes.checked(argument_spec, given, where)
        self.module.no_log_values.update(secrets)
        return values, found

    def providers(self, only=None) -> dict:
        names = [only] if only else list(self.config.names())
        return {n: self.provider(n) for n in names}

    def close(self) -> None:
        for provider in self._providers.values():
            try:
                provider.close()
            except Exception as exc:  # closing must not mask the result
                self.module.warn("closing provider %s failed: %s" % (provider.name, exc))

    def _extras(self) -> dict:
        extras = {"telemetry": self.telemetry.records()}
        if self.module._verbosity >= 3 and self._log.lines:
            extras["debug_log"] = list(self._log.lines)
        return extras

    def exit(self, **result) -> None:
        self.close()
        result.update(self._extras())
        self.module.exit_json(**result)

    def fail(self, msg: str, error_class: str = errors.PERMANENT, **result) -> None:
        self.close()
        result.update(self._extras())
        self.module.fail_json(msg=msg, error_class=error_class, **result)

    def run(self, runner) -> None:
        """Call ``runner(self)`` (which returns the result dict) and exit or fail from it, inside
        the run's span (``tracing.module_span``: exported before the process exits)."""
        with tracing.module_span(getattr(self.module, "_name", "") or "module"):
            self._run(runner)

    def _run(self, runner) -> None:
        try:
            problems = common_problems(self.params, self.raw_params)
            if problems:
                raise UsageError("; ".join(problems))
            result = runner(self)
        except MissingLibrary as exc:
            self.fail(missing_required_lib("pydantic"), exception=str(exc))
        except errors.ConfigError as exc:
            self.fail(str(exc), error_class=errors.PERMANENT, problems=exc.problems)
        except UsageError as exc:
            self.fail(str(exc), error_class=errors.PERMANENT)
        except errors.ProviderError as exc:
            self.fail(str(exc), error_class=exc.error_class)
        else:
            failed_msg = result.pop("failed_msg", None)
            if failed_msg:
                self.fail(failed_msg, error_class=result.pop("error_class", errors.PERMANENT), **result)
            self.exit(**result)
