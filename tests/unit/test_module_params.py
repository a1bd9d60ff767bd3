"""The modules' parameters as given, through ansible-core's public API only (issue 39): no private
``AnsibleModule`` method is overridden, and what the raw parameters were for still holds in a real
module process (its arguments in a file, as the module interface documents): a list element
that is not a mapping is named by its path, with the invocation as given; ``true`` for a number
is refused instead of read as 1."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue import proxy_module
from unit.module_process import run_module

POOL = "ansible_collections.crawl.egress_proxies.plugins.modules.proxy_pool"


def _providers(tmp_path) -> list:
    local = {"stateDir": str(tmp_path / "state"), "addressRange": "127.99.1.0/29"}
    return [{"name": "l", "type": "local", "local": local}]


def test_no_private_method_of_ansible_module_is_overridden():
    private = [
        name
        for name in vars(proxy_module._Module)
        if name.startswith("_") and not name.startswith("__") and hasattr(AnsibleModule, name)
    ]
    assert private == []


def test_a_non_mapping_element_is_named_with_the_invocation_as_given(tmp_path):
    spread = ["la", {"provider": 5}]
    args = {"providers": _providers(tmp_path), "pool": "p", "count": 2, "spread": spread}
    answer = run_module(tmp_path, POOL, args)
    assert answer["failed"] and answer["error_class"] == "permanent"
    assert (
        answer["msg"]
        == "spread[0]: must be a mapping (with max, name, placement, provider, weight), not a str"
    )
    assert answer["invocation"]["module_args"]["spread"] == spread


def test_true_for_a_number_is_refused_not_read_as_one(tmp_path):
    args = {"providers": _providers(tmp_path), "pool": "p", "count": 2, "concurrency": True}
    answer = run_module(tmp_path, POOL, args)
    assert answer["failed"] and answer["msg"] == "concurrency: True must be a whole number from 1 to 256"


def test_cores_own_argument_errors_stay_permanent(tmp_path):
    answer = run_module(tmp_path, POOL, {"providers": _providers(tmp_path), "pool": "p", "timeout": {"a": 1}})
    assert answer["failed"] and answer["error_class"] == "permanent"
    assert "timeout" in answer["msg"] and "float" in answer["msg"]


def test_an_unknown_option_is_cores_message_and_permanent(tmp_path):
    answer = run_module(tmp_path, POOL, {"providers": _providers(tmp_path), "pool": "p", "colour": "red"})
    assert answer["failed"] and answer["error_class"] == "permanent"
    assert "Unsupported parameters" in answer["msg"] and "colour" in answer["msg"]
