"""ownership.refusal: the table of what ``state: absent`` may delete (issue 15)."""

from __future__ import annotations

import pytest

from ansible_collections.crawl.egress_proxies.plugins.module_utils.core.contract import STOPPED, Instance
from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers import ownership


def inst(uid="u1", installation="prod") -> Instance:
    return Instance(id="x/proxy-a", name="proxy-a", uid=uid, state=STOPPED, installation=installation)


@pytest.mark.parametrize(
    "instance,uid,force,fragment",
    [
        pytest.param(inst(), "u1", False, "", id="ours, same uid"),
        pytest.param(inst(), "", False, "", id="ours, no uid asked"),
        pytest.param(inst(), "u2", False, "belongs to uid 'u1', not 'u2'", id="another uid"),
        pytest.param(inst(), "u2", True, "", id="another uid, forced"),
        pytest.param(
            inst(installation="other"), "u1", False, "installation 'other'", id="other installation"
        ),
        pytest.param(
            inst(installation="other"), "", True, "installation 'other'", id="other installation forced"
        ),
        pytest.param(inst(uid=""), "", True, "not managed", id="no uid mark, forced"),
        pytest.param(inst(installation=""), "u1", True, "not managed", id="no installation mark, forced"),
        pytest.param(inst(uid="x\n" * 1000), "u1", False, "...(2000 chars)", id="long uid is cut"),
    ],
)
def test_refusal(instance, uid, force, fragment):
    answer = ownership.refusal(instance, uid, "prod", force)
    if fragment:
        assert fragment in answer
        assert "\n" not in answer and len(answer) < 300
    else:
        assert answer == ""
