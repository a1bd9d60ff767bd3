"""docs/configuration.md's example problem lines ("How problems are reported"), taken from the
Markdown (issue 37) and produced by the collection's parser: each line shown must be exactly one
of the problems that some broken input (written here, by what the line says is wrong) gets back.
The file lines name ``/etc/egress-proxies/providers.yml``: a scratch path stands in for it, and
``...`` in a line stands for the parser's text that follows. The provider types the "A provider
entry" table lists are the registry's.
"""

from __future__ import annotations

import re

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core import errors

from .markdown_blocks import ROOT, blocks

ETC_FILE = "/etc/egress-proxies/providers.yml"


def _local(**block) -> dict:
    return {"providers": [{"name": "a", "type": "local", "local": block}]}


def _kubernetes(**block) -> dict:
    return {"providers": [{"name": "a", "type": "kubernetes", "kubernetes": block}]}


# What is wrong, by the start of the line that reports it.
BROKEN = {
    "providers[0].name: provider name 'Local'": {"providers": [{"name": "Local", "type": "local"}]},
    "providers[0].type: unknown provider type 'lokal'": {"providers": [{"name": "a", "type": "lokal"}]},
    "providers[2].type: required": {
        "providers": [{"name": "a", "type": "local"}, {"name": "b", "type": "local"}, {"name": "c"}]
    },
    "providers[0].kubernetes: a kubernetes block": {
        "providers": [{"name": "a", "type": "local", "kubernetes": {}}]
    },
    "providers[0].kubernetes.resources.limits:": _kubernetes(resources={"limits": {"cpu": "fast"}}),
    "providers[0].kubernetes.requestTimeoutSeconds:": _kubernetes(requestTimeoutSeconds=0),
    "providers[2].name: required": {
        "providers": [{"name": "a", "type": "local"}, {"name": "b", "type": "local"}, {"type": "local"}]
    },
    "providers[0].extra: unknown field": {"providers": [{"name": "a", "type": "local", "extra": 1}]},
    "providers[1].name: duplicate": {
        "providers": [{"name": "a", "type": "local"}, {"name": "a", "type": "local"}]
    },
    "providers[0].local.stateDir:": _local(stateDir="relative/dir"),
    "providers[0].local.state_dir:": _local(state_dir="/x"),
    "providers[0].local.addressRange: must be": _local(addressRange="10.0.0.0/8"),
    "providers[0].local.addressRange: '127.1.0.1/16'": _local(addressRange="127.1.0.1/16"),
    "providers[0].local.allowedSourceRanges: 'x'": _local(allowedSourceRanges=["x"]),
    "providers[0].local.allowedSourceRanges: List": _local(allowedSourceRanges=[]),
    "providers[0].local: must be a mapping": {"providers": [{"name": "a", "type": "local", "local": [1]}]},
    "providers[0]: must be a mapping": {"providers": ["a"]},
    "bogus: unknown field": {"bogus": 1, "providers": []},
}
FILES = {"cannot read providers file": None, "not valid YAML": "providers: [\n"}


def _shown() -> list:
    """The lines of the example block."""
    (block,) = [
        b for b in blocks("docs/configuration.md") if not b.language and "unknown provider type" in b.text
    ]
    return [line for line in block.text.splitlines() if line.strip()]


def _problems(data) -> list:
    with pytest.raises(errors.ConfigError) as caught:
        providers_file.parse(data)
    return caught.value.problems


def _matches(shown: str, problem: str) -> bool:
    return problem.startswith(shown[:-3]) if shown.endswith("...") else problem == shown


@pytest.mark.parametrize("shown", _shown())
def test_the_parser_says_the_documented_line(shown, tmp_path):
    if shown.startswith(ETC_FILE + ":"):
        (what,) = [k for k in FILES if k in shown]
        path = tmp_path / "providers.yml"
        if FILES[what] is not None:
            path.write_text(FILES[what])
        with pytest.raises(errors.ConfigError) as caught:
            providers_file.load_file(str(path))
        problems = [p.replace(str(path), ETC_FILE, 1) for p in caught.value.problems]
    else:
        (start,) = [k for k in BROKEN if shown.startswith(k)]
        problems = _problems(BROKEN[start])
    assert any(_matches(shown, p) for p in problems), problems


def test_every_broken_input_is_shown():
    """An input whose line left the docs is a test of nothing."""
    shown = _shown()
    assert all(any(line.startswith(k) for line in shown) for k in BROKEN), sorted(BROKEN)


def test_the_types_the_table_names_are_the_registrys():
    """The "A provider entry" table lists today's types; the parser's lines above name them too."""
    with open("%s/docs/configuration.md" % ROOT, encoding="utf-8") as handle:
        (listed,) = re.findall(r"Today: ((?:`[\w-]+`(?:, )?)+)\.", handle.read())
    assert sorted(re.findall(r"`([\w-]+)`", listed)) == sorted(registry.type_names())
