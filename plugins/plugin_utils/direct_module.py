# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""Run this collection's modules on a local connection from the installed collection, not a zip.

Why: every module task normally pays for AnsiballZ. The task's worker walks every module_util the
module reaches (``recursive_finder`` parses each with ``ast``), zips them, and the module's new
interpreter unpacks that zip and compiles every file from it, since nothing imported from a zip
keeps its bytecode. For our modules that was about 0.5 CPU-seconds of each run, more than the
module's own work and more than an empty play (docs/performance.md, "The fixed cost of one
ansible run"). The controller pays it on every batch, the test suite on every playbook.

On a local connection the collection is already on this host's disk, so the module runs from it:
the same interpreter (``ansible_python_interpreter``), started by the same connection with the
task's ``environment`` string, arguments on stdin as with pipelining, through ansible-core's own
module loader (``_loader.run_module``, which the AnsiballZ wrapper calls too), and the answer
parsed by ``_parse_returned_data`` as any module's. The module is still its own process (its
command line names it), so killing it, ``no_log``, check and diff mode, warnings and failures
behave as before.

Anything else takes ansible-core's path unchanged: another connection, become, async, an
interpreter other than this one, an ``rlimit_nofile`` setting, or
``EGRESS_PROXIES_DIRECT_MODULES=false`` in the controller's environment. The loader, the
module encoder and ``remove_internal_keys`` are ansible-core internals of 2.19's shape, so the
direct start is chosen by feature detection when a task runs (``fast_path``); an ansible-core
without all of them (2.16 to 2.18, 2.21) takes the ordinary path, which gives the
same results. Nothing version-specific is imported at load time, so an unsupported ansible-core
gets this collection's message (helpers/core_range.py), not an import error.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import json
import os
import sys

from ansible import constants
from ansible.plugins.action.normal import ActionModule as NormalAction
from ansible.release import __version__ as ansible_core_version

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import core_range

try:  # ansible-core 2.19's shape; anything else takes the ordinary path (fast_path)
    from ansible.module_utils.common.json import Direction, get_module_encoder
    from ansible.vars.clean import remove_internal_keys
except ImportError:
    Direction = get_module_encoder = remove_internal_keys = None

SWITCH = "EGRESS_PROXIES_DIRECT_MODULES"
COLLECTION = ("ansible_collections", "crawl", "egress_proxies")
LOADER = "ansible.module_utils._internal._ansiballz._loader"
PROFILE = "legacy"  # what module_common gives a module without METADATA (ours have none)

# The module process's program: the collections root first on sys.path (the current directory
# never, as the AnsiballZ wrapper strips it), the arguments from stdin, then ansible-core's loader.
LAUNCH = (
    "import sys;root,fqn,profile=sys.argv[1:4];"
    "sys.path[:]=[root]+[p for p in sys.path if p.strip(chr(46))];"
    "from ansible.module_utils._internal._ansiballz import _loader;"
    "_loader.run_module(json_params=sys.stdin.buffer.read(),profile=profile,"
    "module_fqn=fqn,modlib_path=root,extensions={})"
)


def collections_root() -> str | None:
    """The directory holding ``ansible_collections/crawl/egress_proxies`` as Ansible found it."""
    package = sys.modules.get(".".join(COLLECTION))
    for path in getattr(package, "__path__", None) or ():
        parts = os.path.normpath(path).split(os.sep)
        if tuple(parts[-3:]) == COLLECTION:
            return os.sep.join(parts[:-3]) or os.sep
    return None


# The keyword arguments LAUNCH passes to the loader's run_module.
LOADER_ARGUMENTS = frozenset(("json_params", "profile", "module_fqn", "modlib_path", "extensions"))


@dataclasses.dataclass(frozen=True)
class FastPath:
    """The ansible-core internals the direct start uses, found by ``fast_path``."""

    encoder: type  # JSONEncoder of the arguments, as module_common encodes them
    clean: object  # removes the ``_ansible_*`` keys from a parsed result, as _execute_module does


@functools.lru_cache(maxsize=1)
def fast_path() -> FastPath | None:
    """The internals of the direct start when this ansible-core has all of them, else None."""
    if None in (Direction, get_module_encoder, remove_internal_keys):
        return None
    try:
        loader = importlib.import_module(LOADER)
        accepted = set(inspect.signature(loader.run_module).parameters)
        encoder = get_module_encoder(PROFILE, Direction.CONTROLLER_TO_MODULE)
    except (ImportError, AttributeError, TypeError, ValueError, KeyError):
        return None
    if not accepted >= LOADER_ARGUMENTS:
        return None
    return FastPath(encoder=encoder, clean=remove_internal_keys)


def switched_on() -> bool:
    """``EGRESS_PROXIES_DIRECT_MODULES`` unset or true: run directly where that is the same."""
    return os.environ.get(SWITCH, "true").strip().lower() not in ("0", "false", "no", "off")


class DirectModuleAction(NormalAction):
    """The action of each of this collection's modules: ``ansible.builtin.normal`` (its ``run``,
    check mode and async support) with the module started directly where that is the same."""

    def run(self, tmp=None, task_vars=None):
        """Refuses an unsupported ansible-core with this collection's message, before anything else."""
        unsupported = core_range.problem(ansible_core_version)
        if unsupported:
            return {"failed": True, "msg": unsupported}
        return super().run(tmp, task_vars)

    def _execute_module(
        self,
        module_name=None,
        module_args=None,
        tmp=None,
        task_vars=None,
        persist_files=False,
        delete_remote_tmp=None,
        wrap_async=False,
        **more,
    ):
        task_vars = task_vars if task_vars is not None else {}
        internals = fast_path()
        interpreter = self._direct_interpreter(task_vars, wrap_async) if internals else None
        root = collections_root()
        if (
            interpreter is None
            or root is None
            or tmp is not None
            or persist_files
            or delete_remote_tmp is not None
        ):
            return super()._execute_module(
                module_name,
                module_args,
                tmp,
                task_vars,
                persist_files,
                delete_remote_tmp,
                wrap_async,
                **more,
            )
        module_name = module_name or self._task.action
        module_args = self._task.args if module_args is None else module_args
        self._update_module_args(module_name, module_args, task_vars, **more)
        fqn = ".".join((*COLLECTION, "plugins", "modules", module_name.rsplit(".", 1)[-1]))
        command = self._connection._shell.join([interpreter, "-c", LAUNCH, root, fqn, PROFILE])
        environment = self._compute_environment_string().strip()
        if environment:
            command = environment + " " + command
        arguments = json.dumps({"ANSIBLE_MODULE_ARGS": module_args}, cls=internals.encoder).encode()
        res = self._low_level_execute_command(command, sudoable=False, in_data=arguments)
        data = self._parse_returned_data(res, PROFILE)
        data.pop("_ansible_suppress_tmpdir_delete", None)
        internals.clean(data)
        return data

    def _direct_interpreter(self, task_vars: dict, wrap_async) -> str | None:
        """This interpreter's path when the module may run directly here, else None."""
        if not switched_on() or wrap_async or self._task.async_val:
            return None
        if getattr(self._connection, "transport", None) != "local" or self._play_context.become:
            return None
        if constants.config.get_config_value("PYTHON_MODULE_RLIMIT_NOFILE", variables=task_vars):
            return None
        wanted = task_vars.get("ansible_python_interpreter")
        if not wanted:
            return None  # interpreter discovery would choose: leave it to ansible-core
        wanted = self._templar.template(wanted)
        if not isinstance(wanted, str) or os.path.abspath(wanted) != os.path.abspath(sys.executable):
            return None
        return sys.executable
