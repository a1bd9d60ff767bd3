"""The providers file as a controller state: a broken version never replaces the last good one.

Breaks the file in the ways people do (invalid YAML, an unknown key, a non-UTF-8 byte, a schema
error only the modules see) and checks that the copy the modules read stays the good one, that
each problem is reported once, and that a fixed file is taken by itself.
"""

from __future__ import annotations

import pytest
from egress_proxies_controller.config.providers_file import ProvidersConfig, check

GOOD = (
    b"installation: t\nproviders:\n"
    b"  - {name: local, type: local, local: {stateDir: /tmp/x}}\n"
    b"  - {name: b, type: local}\n"
)


@pytest.fixture
def files(tmp_path):
    return tmp_path / "providers.yaml", str(tmp_path / "private")


def schema(path, names):
    """Stands in for the modules' check: a block key they do not know (named in the copy)."""
    with open(path, encoding="utf-8") as handle:
        return ["%s: providers[0].local.colour: unknown field" % path] if "colour" in handle.read() else []


@pytest.mark.parametrize(
    "data,problem",
    [
        (b"providers: [\n", "not valid YAML"),
        (b"providers: []\ncolour: blue\n", "unknown top-level key(s) colour"),
        (b"providers:\n  - {name: a, type: local, colour: 1}\n", "unknown key(s) colour"),
        (b"providers:\n  - {name: a, type: local}\n  - {name: a, type: local}\n", "used twice"),
        (b"providers:\n  - {name: caf\xe9, type: local}\n", "not UTF-8"),
        (b"- a\n", "top level must be a mapping"),
    ],
)
def test_check_names_the_file_and_the_problem(data, problem):
    names, message = check(data, "/etc/p.yaml")
    assert names == [] and problem in message and message.startswith("/etc/p.yaml")


def test_a_broken_file_keeps_the_last_good_copy_and_is_reported_once(files):
    path, private = files
    reports = []
    path.write_bytes(GOOD)
    config = ProvidersConfig(str(path), private, schema, reports.append)
    assert config.refresh() and config.names == ["local", "b"]
    good = config.in_use
    with open(good, "rb") as handle:
        assert handle.read() == GOOD
    for broken in (
        b"providers: [\n",
        b"providers:\n  - {name: caf\xe9, type: local}\n",
        GOOD.replace(b"/tmp/x", b"/tmp/x, colour: 1"),
    ):
        path.write_bytes(broken)
        assert not config.refresh()
        assert not config.refresh()  # looked at again: not reported again
        assert config.in_use == good and config.names == ["local", "b"] and config.error
    assert len(reports) == 3 and all(r.startswith(str(path)) for r in reports)
    assert "private" not in reports[2]  # the user's file is named, not the modules' copy
    path.write_bytes(GOOD.replace(b"  - {name: b, type: local}\n", b""))  # a provider removed: valid
    assert config.refresh() and config.names == ["local"] and config.error == ""
    assert reports[-1] == ""


def test_no_good_version_means_no_copy_for_the_modules(files):
    path, private = files
    path.write_bytes(b"providers: [\n")
    config = ProvidersConfig(str(path), private, schema)
    assert not config.refresh() and config.in_use is None and "not valid YAML" in config.error
    path.write_bytes(GOOD)
    assert config.refresh() and config.in_use


def test_a_check_that_cannot_run_is_tried_again(files):
    path, private = files
    path.write_bytes(GOOD)
    calls = []

    def flaky(candidate, names):
        calls.append(candidate)
        if len(calls) == 1:
            raise RuntimeError("runner busy")
        return []

    config = ProvidersConfig(str(path), private, flaky)
    assert not config.refresh() and config.in_use is None and config.error == ""
    assert config.refresh() and config.in_use


def test_a_key_only_the_modules_read_is_not_refused():
    """The controller's shape check reads the modules' own keys (config_keys): rateLimit, which
    only the modules act on, passes it."""
    names, problem = check(b"providers:\n  - {name: a, type: local, rateLimit: {callsPerSecond: 5}}\n", "f")
    assert (names, problem) == (["a"], "")


def test_a_new_version_names_the_providers_it_changed(files):
    path, private = files
    path.write_bytes(GOOD)
    config = ProvidersConfig(str(path), private, schema)
    assert config.refresh() and config.changed == {"local", "b"}
    path.write_bytes(GOOD + b"  - {name: c, type: local}\n")  # c added, the others as they were
    assert config.refresh() and config.changed == {"c"}
    path.write_bytes(GOOD.replace(b"/tmp/x", b"/tmp/y"))  # local's block changed, c removed
    assert config.refresh() and config.changed == {"local", "c"}
    path.write_bytes(GOOD.replace(b"/tmp/x", b"/tmp/y").replace(b"installation: t", b"installation: u"))
    assert config.refresh() and config.changed == {"local", "b"}  # the installation: every provider
