"""The providers file read with bounds (issue 15): every hostile or broken file is a short,
permanent ConfigError with the path and position, never a traceback or a huge message."""

from __future__ import annotations

import time

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import yaml_reader
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError

VALID = "providers:\n  - name: local\n    type: local\n"
BOMB = (
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "providers:\n  - name: local\n    type: *f\n"
)


def _problems(tmp_path, content) -> list:
    path = tmp_path / "providers.yaml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    with pytest.raises(ConfigError) as caught:
        config.load_file(str(path))
    problems = caught.value.problems
    assert all(p.startswith(str(path) + ": ") for p in problems), problems
    assert sum(len(p) for p in problems) < 2000, "messages quote only short excerpts"
    return problems


@pytest.mark.parametrize(
    "content,fragment",
    [
        pytest.param(
            VALID.encode() + b"# caf\xe9\n", "not UTF-8: byte 0xe9 at line 4, column 6", id="latin-1 byte"
        ),
        pytest.param(
            b"\xff\xfe" + VALID.encode(), "not UTF-8: byte 0xff at line 1, column 1", id="utf-16 bom"
        ),
        pytest.param(
            "providers: " + "[" * 20000, "nested deeper than 32 levels at line 1", id="20000 nested ["
        ),
        pytest.param("providers: " + "{a: " * 5000, "nested deeper than", id="nested mappings"),
        pytest.param(BOMB, "expands to more than", id="alias bomb in type"),
        pytest.param(
            VALID + "providers: []\n", "duplicate key 'providers' at line 4, column 1", id="duplicate top key"
        ),
        pytest.param(
            "providers:\n  - name: a\n    name: b\n    type: local\n",
            "duplicate key 'name' at line 3",
            id="duplicate key",
        ),
        pytest.param("providers: [\n", "not valid YAML", id="unclosed flow"),
        pytest.param(
            "providers:\n  - name: " + "x" * 200_000 + "\n    type: local\n",
            "...(200000 chars)",
            id="huge name",
        ),
        pytest.param(
            "providers:\n  - name: local\n    type: " + "lokal" * 40_000 + "\n",
            "(200000 chars)",
            id="huge type",
        ),
        pytest.param(
            'providers:\n  - name: "a\\nb\\u0000"\n    type: local\n', r"'a\nb\x00'", id="newline and NUL"
        ),
    ],
)
def test_bad_file_is_a_short_config_error(tmp_path, content, fragment):
    problems = _problems(tmp_path, content)
    assert any(fragment in p for p in problems), problems


def test_file_over_the_size_limit_fails_fast(tmp_path):
    path = tmp_path / "providers.yaml"
    path.write_text(VALID + "#" * (50 * 1024 * 1024) + "\n")
    started = time.monotonic()
    with pytest.raises(ConfigError, match="larger than %d bytes" % yaml_reader.MAX_FILE_BYTES):
        config.load_file(str(path))
    assert time.monotonic() - started < 2


def test_state_dir_checked_at_parse_time(tmp_path):
    regular = tmp_path / "file"
    regular.write_text("")
    for state_dir, fragment in (
        ("/srv/a\x00b", "contains NUL or control characters"),
        (str(regular), "is not a directory"),
        (str(regular / "below"), "is not a directory"),
    ):
        with pytest.raises(ConfigError) as caught:
            config.parse({"providers": [{"name": "l", "type": "local", "local": {"stateDir": state_dir}}]})
        assert any(
            p.startswith("providers[0].local.stateDir: ") and fragment in p for p in caught.value.problems
        )


def test_overlapping_local_ranges_are_a_config_error(tmp_path):
    entries = [
        {
            "name": "a",
            "type": "local",
            "local": {"stateDir": str(tmp_path / "a"), "addressRange": "127.80.0.0/16"},
        },
        {
            "name": "b",
            "type": "local",
            "local": {"stateDir": str(tmp_path / "b"), "addressRange": "127.80.5.0/24"},
        },
    ]
    with pytest.raises(
        ConfigError, match=r"providers\[1\].local: addressRange 127.80.5.0/24 overlaps 127.80.0.0/16"
    ):
        config.parse({"providers": entries})
    shared = [dict(e, local=dict(e["local"], stateDir=str(tmp_path))) for e in entries]
    assert config.parse({"providers": shared}).names() == ("a", "b")  # one store allocates for both
