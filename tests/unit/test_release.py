"""Releases say what shipped: read from the git history, checked against the tree.

A release is the commit whose ``antsibull-changelog release`` added its version to
changelogs/changelog.yaml; changelogs/releases.yml pins each one by id (docs/releasing.md). From
those commits these tests check that

- every pinned id is that commit, and every release but the latest is pinned;
- galaxy.yml carries the latest release's version (the controller package and its image tag are
  checked against galaxy.yml by tests/controller/test_package.py and test_kustomize.py);
- ``version_added`` of every module, inventory plugin and role, and of every option added after
  its plugin, is the first release whose commit has it, or a version after the latest release
  when no release has it yet (what 0.1.0's ``proxy_pool: version_added: 0.1.0`` got wrong);
- a module of an earlier release that is gone has a tombstone in meta/runtime.yml;
- when plugins/ or controller/ changed since the latest release's commit, a changelog fragment
  was added since then.

They need the full history (CI clones it; a shallow clone fails here, saying so).
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHANGELOG = "changelogs/changelog.yaml"
FRAGMENTS = "changelogs/fragments"
# The paths whose changes a user can notice; each change needs a fragment (docs/releasing.md).
SHIPPED = ("plugins", "controller")
_DOC = re.compile(r'^DOCUMENTATION = r?"""(.*?)^"""', re.S | re.M)


def git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.returncode == 0, "git %s: %s" % (" ".join(args), out.stderr)
    return out.stdout


def version_key(version: str) -> tuple:
    return tuple(int(part) for part in str(version).split("."))


def load(path: str):
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def releases() -> dict:
    """``{version: commit}`` for every release of changelog.yaml, oldest first; the latest one's
    commit is None while its release is not committed yet (the working tree is that release)."""
    assert git("rev-parse", "--is-shallow-repository").strip() == "false", (
        "a shallow clone: the release checks read every release's commit (git fetch --unshallow)"
    )
    versions = sorted(load(CHANGELOG)["releases"], key=version_key)
    found = {}
    for version in versions:
        line = "^  %s:$" % re.escape(version)  # a key under `releases:` (changelog_nice_yaml)
        commits = git(
            "log", "--full-history", "--no-merges", "--format=%H", "-G", line, "--", CHANGELOG
        ).split()
        if not commits and version == versions[-1]:  # being released: not committed yet
            found[version] = None
            continue
        assert len(commits) == 1, "%s: %d commits add or remove it in %s: %s" % (
            version,
            len(commits),
            CHANGELOG,
            commits,
        )
        found[version] = commits[0]
    return found


def test_each_release_is_pinned_to_the_commit_that_released_it(releases):
    pinned = {str(k): v for k, v in load("changelogs/releases.yml").items()}
    assert set(pinned) <= set(releases), "pinned releases the changelog does not list"
    *earlier, _latest = releases  # the latest may be unpinned yet: its own commit cannot name itself
    for version in earlier:
        assert version in pinned, "%s is not pinned in changelogs/releases.yml" % version
    for version, commit in pinned.items():
        assert commit == releases[version], "%s is pinned to %s, released at %s" % (
            version,
            commit,
            releases[version],
        )
    assert releases["0.1.0"] == "6f5d42ca769b241d5c04ba91a36f4c5782fb1da9"


def test_galaxy_carries_the_latest_release(releases):
    assert load("galaxy.yml")["version"] == list(releases)[-1]


def _doc_of(text: str, path: str) -> dict:
    if path.endswith("argument_specs.yml"):
        return (yaml.safe_load(text).get("argument_specs") or {}).get("main") or {}
    match = _DOC.search(text)
    assert match, "%s has no DOCUMENTATION" % path
    return yaml.safe_load(match.group(1))


def _plugin_files(names: list) -> dict:
    """``{(kind, name): path}`` of the modules, inventory plugins and roles among ``names``."""
    found = {}
    for path in names:
        parts = path.split("/")
        if len(parts) == 3 and parts[:2] == ["plugins", "modules"] and parts[2].endswith(".py"):
            found[("module", parts[2][:-3])] = path
        elif len(parts) == 3 and parts[:2] == ["plugins", "inventory"] and parts[2].endswith(".py"):
            found[("inventory", parts[2][:-3])] = path
        elif len(parts) == 4 and parts[0] == "roles" and parts[2:] == ["meta", "argument_specs.yml"]:
            found[("role", parts[1])] = path
    return {k: v for k, v in found.items() if k[1] != "__init__"}


def _options(doc: dict, prefix: str = "") -> dict:
    """``{option path: version_added}`` (``instances.auth`` for a suboption; a role's nested
    options are ``options``, a plugin's ``suboptions``)."""
    found = {}
    for name, spec in (doc.get("options") or doc.get("suboptions") or {}).items():
        found[prefix + name] = str(spec.get("version_added") or "")
        found.update(_options(spec, prefix + name + "."))
    return found


def _snapshot(commit: str | None) -> dict:
    """``{(kind, name): (version_added, {option: version_added})}`` at ``commit`` (None: the tree)."""
    if commit is None:
        names = git("ls-files", "plugins/modules", "plugins/inventory", "roles").split()
    else:
        names = git(
            "ls-tree", "-r", "--name-only", commit, "plugins/modules", "plugins/inventory", "roles"
        ).split()
    found = {}
    for key, path in _plugin_files(names).items():
        if commit is None:
            with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
                text = handle.read()
        else:
            text = git("show", "%s:%s" % (commit, path))
        doc = _doc_of(text, path)
        found[key] = (str(doc.get("version_added") or ""), _options(doc))
    return found


def test_version_added_is_the_first_release_with_it(releases):
    history = {version: _snapshot(commit) for version, commit in releases.items()}
    latest = list(releases)[-1]
    now = _snapshot(None)
    wrong = []

    def first_with(key, option=None):
        for version, snapshot in history.items():
            if key in snapshot and (option is None or option in snapshot[key][1]):
                return version
        return None

    def check(what: str, said: str, first: str | None) -> None:
        if first is None:  # not released yet: the next release's version
            if not said or version_key(said) <= version_key(latest):
                wrong.append("%s: version_added %r, but it is new since %s" % (what, said, latest))
        elif said != first:
            wrong.append("%s: version_added %r, but %s first shipped it" % (what, said, first))

    for key, (added, options) in sorted(now.items()):
        plugin_first = first_with(key)
        check("%s %s" % key, added, plugin_first)
        for option, option_added in sorted(options.items()):
            parent = option.rpartition(".")[0]
            first = first_with(key, option)
            inherited = first_with(key, parent) if parent else plugin_first
            if first == inherited and first is not None:
                if option_added and option_added != first:  # may repeat its parent's, nothing else
                    wrong.append(
                        "%s %s option %s: version_added %r, but %s shipped it"
                        % (*key, option, option_added, first)
                    )
                continue
            if first is None and inherited is None:
                continue  # new with its parent (or its plugin): the parent's version_added says it
            check("%s %s option %s" % (*key, option), option_added, first)
    assert not wrong, "\n".join(wrong)


def test_a_module_of_an_earlier_release_that_is_gone_has_a_tombstone(releases):
    routing = (load("meta/runtime.yml").get("plugin_routing") or {}).get("modules") or {}
    now = _snapshot(None)
    for version, commit in releases.items():
        for kind, name in _snapshot(commit):
            if kind == "module" and (kind, name) not in now:
                assert "tombstone" in routing.get(name, {}), "%s (in %s) is gone without a tombstone" % (
                    name,
                    version,
                )


def test_a_fragment_for_the_changes_to_plugins_and_controller_since_the_latest_release(releases):
    """The fragments added since the latest release's commit are not empty when plugins/ or
    controller/ changed since then (committed or not): a release deletes every fragment, so each
    one present now was added for a change made after it (docs/releasing.md, "Fragments")."""
    latest = list(releases)[-1]
    commit = releases[latest]
    if commit is None:  # the release itself, before its commit: it deletes every fragment
        return
    changed = git("diff", "--name-only", commit, "--", *SHIPPED).split()
    released = set(git("ls-tree", "--name-only", "%s:%s" % (commit, FRAGMENTS)).split())
    fragments = sorted(
        name
        for name in os.listdir(os.path.join(ROOT, FRAGMENTS))
        if name.endswith((".yml", ".yaml")) and name not in released
    )
    if changed:
        commits = git("log", "--no-merges", "--format=%h %s", "%s..HEAD" % commit, "--", *SHIPPED)
        assert fragments, "plugins/ or controller/ changed since %s (%s) and no fragment was added:\n%s%s" % (
            latest,
            commit[:12],
            commits[:3000],
            "\n".join(changed[:20]),
        )
    for name in fragments:
        document = load(os.path.join(FRAGMENTS, name))
        assert isinstance(document, dict) and any(document.values()), "%s says nothing" % name
