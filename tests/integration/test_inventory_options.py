"""The inventory plugin validates its options as the modules do (issue 28 §7): a bad
``timeout`` or ``port`` fails the source with a message naming the field, instead of every
provider warning that its list ran past its deadline or a port no proxy listens on; a
``hostnames`` entry that is neither a field nor a template is refused naming the entry, never read
as one literal name for every host."""

from __future__ import annotations

import pytest
from contract.local_backend import random_loopback_range

from . import inventory_cli as cli

pytestmark = [pytest.mark.squid]


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"timeout": -5}, "timeout: -5.0 must be more than 0"),
        ({"timeout": 0}, "timeout: 0.0 must be more than 0"),
        ({"port": 99999}, "port: 99999 is not a port (1-65535)"),
        ({"port": 0}, "port: 0 is not a port (1-65535)"),
        ({"installation": "Bad_Label"}, "installation"),
        ({"hostnames": ["uid", "public_ip"]}, "hostnames[1]: 'public_ip' is none of name, uid, ip, id"),
        ({"hostnames": ["uid", "uid"]}, "hostnames[1]: 'uid' is given twice"),
        ({"hostnames": ["ip", {"name": "uid"}]}, "hostnames[1]: a mapping is not a field name or a template"),
        ({"hostnames": []}, "hostnames: an empty list names no host"),
    ],
)
def test_a_bad_option_fails_the_source_naming_the_field(tmp_path, options, fragment):
    providers = cli.write_local_provider(tmp_path, random_loopback_range())
    source = cli.write_source(tmp_path, providers_file=providers, **options)
    run = cli.inventory(source)
    assert run.rc != 0, run.stdout[-2000:]
    assert fragment in run.stderr, run.stderr[-2000:]
    assert "past its deadline" not in run.stderr
