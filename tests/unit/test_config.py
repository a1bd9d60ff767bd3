"""Unit tests for config/providers_file.py: every bad input is refused with its exact path, all at once;
files and the inline/file/env-var precedence of resolve()."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils import registry
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config import providers_file as config
from ansible_collections.crawl.egress_proxies.plugins.module_utils.config.base import BlockModel
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.errors import ConfigError
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.provider_type import ProviderType
from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.pydantic_compat import Field
from ansible_collections.crawl.egress_proxies.plugins.module_utils.providers.local.config import (
    DEFAULT_ADDRESS_RANGE,
    DEFAULT_STATE_DIR,
)

OK = {"name": "a", "type": "local"}


def second(entry) -> dict:
    """A document whose second provider is ``entry`` (so paths must say ``providers[1]``)."""
    return {"providers": [dict(OK), entry]}


def local(**block) -> dict:
    return second({"name": "b", "type": "local", "local": block})


BAD = [
    ("unknown top-level key", {"providers": [OK], "extra": 1}, "extra: unknown field"),
    ("providers missing", {}, "providers: must be a list"),
    ("providers not a list", {"providers": {"name": "a", "type": "local"}}, "providers: must be a list"),
    ("providers a string", {"providers": "local"}, "providers: must be a list"),
    ("entry not a mapping", second("local"), "providers[1]: must be a mapping"),
    ("entry a list", second(["a"]), "providers[1]: must be a mapping"),
    ("missing name", second({"type": "local"}), "providers[1].name: required"),
    ("empty name", second({"name": "", "type": "local"}), "providers[1].name: required"),
    ("name not a string", second({"name": 5, "type": "local"}), "providers[1].name: required"),
    (
        "non-DNS name",
        second({"name": "Local_1", "type": "local"}),
        "providers[1].name: provider name 'Local_1'",
    ),
    ("name too long", second({"name": "a" * 64, "type": "local"}), "providers[1].name: provider name"),
    ("name with newline", second({"name": "b\n", "type": "local"}), "providers[1].name: provider name"),
    (
        "duplicate name",
        second(dict(OK)),
        "providers[1].name: duplicate provider name 'a' (also providers[0])",
    ),
    ("unknown type", second({"name": "b", "type": "gce"}), "providers[1].type: unknown provider type 'gce'"),
    (
        "missing type",
        second({"name": "b"}),
        "providers[1].type: required, one of " + ", ".join(registry.type_names()),
    ),
    (
        "unknown key in entry",
        second({"name": "b", "type": "local", "zone": "x"}),
        "providers[1].zone: unknown field",
    ),
    (
        "block not a mapping",
        second({"name": "b", "type": "local", "local": "x"}),
        "providers[1].local: must be a mapping",
    ),
    (
        "block a list",
        second({"name": "b", "type": "local", "local": ["x"]}),
        "providers[1].local: must be a mapping",
    ),
    ("unknown key in block", local(stateDirectory="/x"), "providers[1].local.stateDirectory: unknown field"),
    ("snake_case key in block", local(state_dir="/x"), "providers[1].local.state_dir: unknown field"),
    (
        "string for a list",
        local(allowedSourceRanges="127.0.0.0/8"),
        "providers[1].local.allowedSourceRanges: Input should be a valid list",
    ),
    ("int for a string", local(stateDir=5), "providers[1].local.stateDir: Input should be a valid string"),
    (
        "empty list",
        local(allowedSourceRanges=[]),
        "providers[1].local.allowedSourceRanges: List should have at least 1 item",
    ),
    (
        "empty squidBinary",
        local(squidBinary=""),
        "providers[1].local.squidBinary: String should have at least 1 character",
    ),
    (
        "relative stateDir",
        local(stateDir="var/lib/x"),
        "providers[1].local.stateDir: must be an absolute path",
    ),
    (
        "addressRange outside 127/8",
        local(addressRange="10.0.0.0/24"),
        "providers[1].local.addressRange: must be an IPv4 range inside 127.0.0.0/8",
    ),
    (
        "addressRange IPv6",
        local(addressRange="::1/128"),
        "providers[1].local.addressRange: must be an IPv4 range inside 127.0.0.0/8",
    ),
    (
        "addressRange host bits",
        local(addressRange="127.5.5.1/24"),
        "providers[1].local.addressRange: '127.5.5.1/24' is not a CIDR range",
    ),
    (
        "addressRange not CIDR",
        local(addressRange="loopback"),
        "providers[1].local.addressRange: 'loopback' is not a CIDR range",
    ),
    (
        "addressRange too small",
        local(addressRange="127.5.5.0/31"),
        "providers[1].local.addressRange: must hold at least 4 addresses",
    ),
    (
        "bad CIDR in allowedSourceRanges",
        local(allowedSourceRanges=["127.0.0.0/8", "nope"]),
        "providers[1].local.allowedSourceRanges: 'nope' is not a CIDR range",
    ),
    (
        "installation not a DNS label",
        {"installation": "Prod EU", "providers": [OK]},
        "installation: installation 'Prod EU' must be a DNS label",
    ),
    ("installation not a string", {"installation": 7, "providers": [OK]}, "installation: must be a string"),
    (
        "installation empty",
        {"installation": "", "providers": [OK]},
        "installation: installation '' must be a DNS label",
    ),
    ("root not a mapping", ["providers"], "<root>: must be a mapping"),
]


@pytest.mark.parametrize("doc,expected", [pytest.param(d, e, id=i) for i, d, e in BAD])
def test_bad_input_names_the_exact_field(doc, expected):
    with pytest.raises(ConfigError) as exc_info:
        config.parse(doc)
    problems = exc_info.value.problems
    assert any(p.startswith(expected) for p in problems), problems
    assert len(problems) == 1, "one mistake, one problem: %s" % problems
    assert expected in str(exc_info.value)


def test_every_problem_is_reported_at_once():
    doc = {
        "installation": "X",
        "zzz": 1,
        "providers": [
            {"name": "B", "type": "nope"},
            {"name": "c", "type": "local", "local": {"stateDir": "rel", "addressRange": "10.0.0.0/8"}},
            "junk",
            {"name": "d", "type": "local", "color": "red"},
        ],
    }
    with pytest.raises(ConfigError) as exc_info:
        config.parse(doc)
    prefixes = [
        "zzz: unknown field",
        "installation: installation 'X'",
        "providers[0].name: provider name 'B'",
        "providers[0].type: unknown provider type 'nope'",
        "providers[1].local.stateDir: must be an absolute path",
        "providers[1].local.addressRange: must be an IPv4 range",
        "providers[2]: must be a mapping",
        "providers[3].color: unknown field",
    ]
    problems = exc_info.value.problems
    for prefix in prefixes:
        assert sum(p.startswith(prefix) for p in problems) == 1, (prefix, problems)
    assert len(problems) == len(prefixes)


def test_defaults_and_a_valid_document():
    parsed = config.parse(
        {
            "installation": "prod-eu",
            "providers": [
                {"name": "a", "type": "local"},
                {"name": "b", "type": "local", "local": None},
                {
                    "name": "c",
                    "type": "local",
                    "local": {
                        "stateDir": "/srv/x",
                        "squidBinary": "/usr/sbin/squid",
                        "addressRange": "127.9.0.0/24",
                        "allowedSourceRanges": ["127.0.0.1/32", "::1/128"],
                    },
                },
            ],
        }
    )
    assert parsed.installation == "prod-eu"
    assert parsed.names() == ("a", "b", "c")
    assert parsed.find("a").block.state_dir == DEFAULT_STATE_DIR
    assert parsed.find("b").block.address_range == DEFAULT_ADDRESS_RANGE
    assert parsed.find("c").block.allowed_source_ranges == ["127.0.0.1/32", "::1/128"]
    assert parsed.find("zzz") is None
    assert config.parse({"providers": []}).installation == "default"


class DemoHost(BlockModel):
    name: str
    cores: int = 1


class DemoBlock(BlockModel):
    disk_size_gb: int = 10
    hosts: list[DemoHost] = Field(default_factory=list)


@pytest.fixture
def demo_type(monkeypatch):
    """A second registered type, to reach the checks that only matter once there are two."""
    demo = ProviderType(name="demo", block=DemoBlock, factory=lambda *a: None)
    monkeypatch.setitem(registry._TYPES, "demo", demo)
    return demo


def test_a_block_of_another_type_is_refused(demo_type):
    with pytest.raises(ConfigError) as exc_info:
        config.parse(second({"name": "b", "type": "local", "demo": {}}))
    assert exc_info.value.problems == [
        "providers[1].demo: a demo block does not belong to a provider of type 'local'"
    ]


def test_type_allow_list_comes_from_the_registry(demo_type):
    known = ", ".join(registry.type_names())
    assert "demo" in known.split(", ")
    with pytest.raises(ConfigError, match=r"known: %s\)" % known):
        config.parse(second({"name": "b", "type": "no-such-type"}))
    assert config.parse(second({"name": "b", "type": "demo"})).find("b").type == "demo"


@pytest.mark.parametrize(
    "block,expected",
    [
        ({"diskSizeGb": "10"}, "providers[1].demo.diskSizeGb: Input should be a valid integer"),
        ({"diskSizeGb": 1.5}, "providers[1].demo.diskSizeGb: Input should be a valid integer"),
        ({"hosts": [{"name": "h1"}, {"cores": 2}]}, "providers[1].demo.hosts[1].name: Field required"),
        ({"hosts": [{"name": "h1", "cores": "2"}]}, "providers[1].demo.hosts[0].cores: Input should be"),
        ({"hosts": [{"name": "h1", "cpu": 2}]}, "providers[1].demo.hosts[0].cpu: unknown field"),
        ({"hosts": "h1"}, "providers[1].demo.hosts: Input should be a valid list"),
    ],
)
def test_strict_types_and_nested_paths(demo_type, block, expected):
    with pytest.raises(ConfigError) as exc_info:
        config.parse(second({"name": "b", "type": "demo", "demo": block}))
    assert [p for p in exc_info.value.problems if p.startswith(expected)], exc_info.value.problems


# -- files -----------------------------------------------------------------------------------


def test_load_file_missing(tmp_path):
    path = tmp_path / "absent.yml"
    with pytest.raises(ConfigError) as exc_info:
        config.load_file(str(path))
    assert exc_info.value.problems == ["%s: cannot read providers file: No such file or directory" % path]


def test_load_file_invalid_yaml(tmp_path):
    path = tmp_path / "bad.yml"
    path.write_text("providers: [\n  - name: a\n")
    with pytest.raises(ConfigError) as exc_info:
        config.load_file(str(path))
    (problem,) = exc_info.value.problems
    assert problem.startswith("%s: not valid YAML:" % path)


def test_load_file_empty(tmp_path):
    path = tmp_path / "empty.yml"
    path.write_text("")
    with pytest.raises(ConfigError) as exc_info:
        config.load_file(str(path))
    assert exc_info.value.problems == ["%s: providers: must be a list of {name, type, <type block>}" % path]


def test_load_file_prefixes_problems_with_the_file(tmp_path):
    path = tmp_path / "p.yml"
    path.write_text("providers:\n  - name: a\n    type: local\n    local:\n      stateDir: rel\n")
    with pytest.raises(ConfigError) as exc_info:
        config.load_file(str(path))
    assert exc_info.value.problems == ["%s: providers[0].local.stateDir: must be an absolute path" % path]


def test_load_file_valid(tmp_path):
    path = tmp_path / "p.yml"
    path.write_text("installation: lab\nproviders:\n  - {name: a, type: local}\n")
    parsed = config.load_file(str(path))
    assert (parsed.installation, parsed.names(), parsed.source) == ("lab", ("a",), str(path))


# -- resolve(): inline, then file, then the environment variable ----------------------------------


def write(tmp_path, name: str, provider_name: str) -> str:
    path = tmp_path / name
    path.write_text("providers:\n  - {name: %s, type: local}\n" % provider_name)
    return str(path)


@pytest.fixture
def env_file(tmp_path, monkeypatch):
    path = write(tmp_path, "env.yml", "from-env")
    monkeypatch.setenv(config.ENV_PROVIDERS_FILE, path)
    return path


def test_resolve_inline_beats_env(env_file):
    assert config.resolve(None, [{"name": "inline", "type": "local"}]).names() == ("inline",)


def test_resolve_file_beats_env(tmp_path, env_file):
    path = write(tmp_path, "explicit.yml", "from-file")
    assert config.resolve(path, None).names() == ("from-file",)


def test_resolve_env_when_nothing_else(env_file):
    assert config.resolve(None, None).names() == ("from-env",)
    assert config.resolve("", None).names() == ("from-env",)


def test_resolve_inline_and_file_are_mutually_exclusive(tmp_path):
    path = write(tmp_path, "explicit.yml", "from-file")
    with pytest.raises(ConfigError, match="providers and providers_file are mutually exclusive"):
        config.resolve(path, [{"name": "inline", "type": "local"}])


def test_resolve_nothing_configured(monkeypatch):
    monkeypatch.delenv(config.ENV_PROVIDERS_FILE, raising=False)
    with pytest.raises(ConfigError, match=config.ENV_PROVIDERS_FILE):
        config.resolve(None, None)


def test_resolve_env_pointing_nowhere(tmp_path, monkeypatch):
    monkeypatch.setenv(config.ENV_PROVIDERS_FILE, str(tmp_path / "gone.yml"))
    with pytest.raises(ConfigError, match="cannot read providers file"):
        config.resolve(None, None)


def test_resolve_installation_override(tmp_path, env_file):
    assert config.resolve(None, [OK], installation="lab").installation == "lab"
    assert config.resolve(None, None, installation="lab").installation == "lab"
    assert config.resolve(None, None).installation == "default"
    with pytest.raises(ConfigError, match="installation: installation 'Bad Name'"):
        config.resolve(None, None, installation="Bad Name")


def test_resolve_inline_is_validated_like_a_file():
    with pytest.raises(ConfigError) as exc_info:
        config.resolve(None, [OK, {"name": "a", "type": "local"}])
    assert exc_info.value.problems == ["providers[1].name: duplicate provider name 'a' (also providers[0])"]
