"""Feed a user-data to cloud-init's own code, without booting, and tell what a guest would run and in
which order (run by Debian's /usr/bin/python3, whose ``cloudinit`` package hack/bootstrap.sh
installs; the project's venv cannot import it).

Usage: ``cloud_init_run.py <user-data file> <scratch dir> [--execute]``; prints one JSON
document. The steps are cloud-init's: the datasource hands the raw user-data to
``UserDataProcessor`` (MIME parts, includes, gzip, archives), the default part handlers
(cloud-config merging, shell scripts into the instance's ``scripts/`` under the part's file name,
per-frequency scripts, boothooks, jinja) consume it, then the modules in their stages' order:
``runcmd`` writes its script, and the final stage's ``scripts_per_once``, ``scripts_per_boot``,
``scripts_per_instance`` and ``scripts_user`` run their directories.

By default nothing is executed: ``subp.subp`` records what would run (boothooks, the scripts)
instead, and every path is under the scratch directory. With ``--execute`` (only inside a
private mount namespace whose ``/etc`` is a throwaway overlay: tests/integration/
test_cloud_init_guest_squid.py) the init stage's ``write_files`` writes the files and the
scripts really run.
"""

from __future__ import annotations

import json
import logging
import os
import sys

from cloudinit import cloud, distros, handlers, helpers, subp, util
from cloudinit.config import (
    cc_runcmd,
    cc_scripts_per_boot,
    cc_scripts_per_instance,
    cc_scripts_per_once,
    cc_scripts_user,
    cc_write_files,
)
from cloudinit.handlers.boot_hook import BootHookPartHandler
from cloudinit.handlers.cloud_config import CloudConfigPartHandler
from cloudinit.handlers.jinja_template import JinjaTemplatePartHandler
from cloudinit.handlers.shell_script import ShellScriptPartHandler
from cloudinit.handlers.shell_script_by_frequency import ShellScriptByFreqPartHandler
from cloudinit.settings import PER_ALWAYS, PER_INSTANCE, PER_ONCE
from cloudinit.sources.DataSourceNone import DataSourceNone

RAN = []  # what would have been executed, in order: argv lists
SCRIPT_MODULES = {  # the final-stage modules that run scripts
    "scripts_per_once": cc_scripts_per_once,
    "scripts_per_boot": cc_scripts_per_boot,
    "scripts_per_instance": cc_scripts_per_instance,
    "scripts_user": cc_scripts_user,
}
CLOUD_CFG = "/etc/cloud/cloud.cfg"  # Debian's: the stages' module lists, in order


def final_stage_modules() -> list:
    """The script modules in the order the package's cloud.cfg runs its final stage."""
    listed = util.read_conf(CLOUD_CFG).get("cloud_final_modules") or []
    names = [(entry if isinstance(entry, str) else entry[0]).replace("-", "_") for entry in listed]
    return [(name, SCRIPT_MODULES[name]) for name in names if name in SCRIPT_MODULES]


WARNINGS = []


class _Warnings(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            WARNINGS.append(record.getMessage())


def _record(args, **_kwargs):
    RAN.append(list(args) if isinstance(args, list | tuple) else [args])
    return subp.SubpResult("", "")


def _default_handlers(paths, datasource) -> list:
    """The same set, built the same way, as ``stages.Init`` gives user-data."""
    opts = {"paths": paths, "datasource": datasource}
    config = CloudConfigPartHandler(**opts)
    script = ShellScriptPartHandler(**opts)
    return [
        config,
        script,
        ShellScriptByFreqPartHandler(PER_ALWAYS, **opts),
        ShellScriptByFreqPartHandler(PER_INSTANCE, **opts),
        ShellScriptByFreqPartHandler(PER_ONCE, **opts),
        BootHookPartHandler(**opts),
        JinjaTemplatePartHandler(**opts, sub_handlers=[config, script]),
    ]


def _consume(message, handler_list, data, idir) -> None:
    """What ``stages.Init._do_handlers`` does with them (no custom handler directory)."""
    registry = helpers.ContentHandlers()
    for mod in handler_list:
        registry.register(mod, overwrite=False)
    begun = []
    for _ctype, mod in registry.items():
        if mod not in begun:
            handlers.call_begin(mod, data, PER_INSTANCE)
            begun.append(mod)
    part_data = {
        "handlers": registry,
        "handlerdir": os.path.join(idir, "handlers"),
        "data": data,
        "frequency": PER_INSTANCE,
        "handlercount": 0,
        "excluded": [],
    }
    try:
        handlers.walk(message, handlers.walker_callback, data=part_data)
    finally:
        for mod in begun:
            handlers.call_end(mod, data, PER_INSTANCE)


def main(user_data_path: str, scratch: str, execute: bool = False) -> dict:
    logging.getLogger().addHandler(_Warnings())
    logging.getLogger().setLevel(logging.DEBUG)
    real_subp = subp.subp

    def _record_and_run(args, **kwargs):
        RAN.append(list(args))
        return real_subp(args, **kwargs)

    # runparts and the boothook handler look subp.subp up at call time
    subp.subp = _record_and_run if execute else _record
    with open(user_data_path, "rb") as handle:
        raw = handle.read()
    paths = helpers.Paths(
        {"cloud_dir": os.path.join(scratch, "cloud"), "run_dir": os.path.join(scratch, "run")}
    )
    sys_cfg = {"datasource": {"None": {"userdata_raw": raw}}}
    datasource = DataSourceNone(sys_cfg, None, paths)
    assert datasource.get_data()
    paths.datasource = datasource
    idir = paths.get_ipath()
    for sub in ("scripts", "boothooks", "handlers", "data", "sem"):
        os.makedirs(os.path.join(idir, sub), exist_ok=True)
    os.symlink(idir, paths.instance_link)
    message = datasource.get_userdata(True)
    parts = [
        [part.get_content_type(), part.get_filename()] for part in message.walk() if not part.is_multipart()
    ]
    distro = distros.fetch("debian")("debian", {}, paths)
    the_cloud = cloud.Cloud(datasource, paths, {}, distro, helpers.Runners(paths))
    _consume(message, _default_handlers(paths, datasource), the_cloud, idir)
    cfg_path = paths.get_ipath("cloud_config")
    cfg = util.load_yaml(util.load_file(cfg_path)) if os.path.exists(cfg_path) else {}
    cfg = cfg or {}
    boothooks = list(RAN)
    log = logging.getLogger("cloud_init_run")
    if execute:
        cc_write_files.handle("write_files", cfg, the_cloud, log, [])  # the init stage's
    cc_runcmd.handle("runcmd", cfg, the_cloud, log, [])  # the config stage's
    final_stage = []
    failed = []
    for name, module in final_stage_modules():
        del RAN[:]
        try:
            module.handle(name, cfg, the_cloud, log, [])
        except RuntimeError as exc:  # runparts ran every script, then reports those that failed
            failed.append("%s: %s" % (name, exc))
        final_stage.append([name, [os.path.basename(args[-1]) for args in RAN]])
    subp.subp = real_subp
    scripts_dir = os.path.join(idir, "scripts")
    per = {}
    for freq in ("per-boot", "per-instance", "per-once"):
        where = os.path.join(paths.cloud_dir, "scripts", freq)
        per[freq] = sorted(os.listdir(where)) if os.path.isdir(where) else []
    return {
        "parts": parts,
        "cloud_config": {key: cfg.get(key) for key in ("write_files", "runcmd", "packages") if key in cfg},
        "boothooks_run": [os.path.basename(args[0]) for args in boothooks],
        "final_stage": final_stage,
        "scripts_user_order": dict(final_stage)["scripts_user"],
        "scripts": {
            name: util.load_file(os.path.join(scripts_dir, name)) for name in os.listdir(scripts_dir)
        },
        "per_frequency_scripts": per,
        "failed": failed,
        "warnings": WARNINGS,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], "--execute" in sys.argv[3:]), indent=1, sort_keys=True))
