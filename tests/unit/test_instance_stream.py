"""``proxy_instance``'s ``instance_stream``: batch items read while the run works. Every line is
one item numbered after ``instances``; each is checked as strictly as a listed item (core's
argument spec, then the collection's own checks, a repeat of any earlier item refused), its
``no_log`` values are masked from the moment it is read, a line that is not a JSON object is
never quoted, and ``batch.run`` starts each item as soon as it is read, while the reader still
waits for the next line."""

from __future__ import annotations

import io
import os
import threading

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.crawl.egress_proxies.plugins.module_utils.module_glue.proxy_module import ProxyModule
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners import batch, instance_stream
from ansible_collections.crawl.egress_proxies.plugins.module_utils.runners.instance_items import (
    InvalidItem,
    Item,
    items_from_params,
)
from ansible_collections.crawl.egress_proxies.plugins.modules import proxy_instance
from unit.module_process import run_module

MODULE = "ansible_collections.crawl.egress_proxies.plugins.modules.proxy_instance"
SECRET = "SENTINEL-streamed-cloud-init-4b2"
PASSWORD = "SENTINEL-streamed-password-9d7"


def _providers(tmp_path) -> list:
    local = {"stateDir": str(tmp_path / "state"), "addressRange": "127.99.5.0/28"}
    return [{"name": "l", "type": "local", "local": local}]


def _pipe_with(lines: list) -> int:
    """The read end of a pipe already holding ``lines`` (raw bytes, as written) and closed by
    its writer."""
    read, write = os.pipe()
    os.write(write, b"".join(lines))
    os.close(write)
    return read


def _module(tmp_path, path: str, **given) -> ProxyModule:
    """The real ``ProxyModule`` of proxy_instance over ``given`` (a batch of one listed item by
    default), in this process."""
    args = {
        "providers": _providers(tmp_path),
        "provider": "l",
        "port": 8080,
        "instances": [{"uid": "listed-0"}],
        "invalid_items": "fail_item",
        "instance_stream": path,
    }
    args.update(given)
    with patch_module_args(args):
        return ProxyModule(proxy_instance.argument_spec(), supports_check_mode=True)


def _streamed(tmp_path, lines: list, **given) -> tuple:
    """(the module, its listed items, the items read from ``lines``); the pipe is named as the
    controller names its own (``/proc/<pid>/fd/<n>``)."""
    read = _pipe_with(lines)
    try:
        pm = _module(tmp_path, "/proc/%d/fd/%d" % (os.getpid(), read), **given)
        listed = items_from_params(pm.params, pm.config, isolate=True, raw=pm.raw_params, resolve=pm.provider)
        items = list(listed)
        streamed = list(instance_stream.InstanceStream(pm, items))
    finally:
        os.close(read)
    assert items == listed + streamed  # the run's list holds every item read
    return pm, listed, streamed


def test_every_line_is_one_item_a_blank_one_and_a_last_fragment_too():
    got = list(instance_stream.lines(io.BytesIO(b'{"uid": "a"}\n\n  \n{"uid": "b"}')))
    assert got == [b'{"uid": "a"}', b"", b"  ", b'{"uid": "b"}']
    assert list(instance_stream.lines(io.BytesIO(b"a\n"))) == [b"a"]  # no empty item after the last newline


def test_a_line_too_long_is_one_item_and_the_next_line_is_read_as_usual():
    data = b"x" * 40 + b"\n" + b'{"uid": "after"}\n'
    assert list(instance_stream.lines(io.BytesIO(data), limit=16)) == [None, b'{"uid": "after"}']


def test_a_valid_line_is_an_item_numbered_after_the_listed_ones_with_the_top_level_defaults(tmp_path):
    _pm, listed, streamed = _streamed(
        tmp_path, [b'{"uid": "s-0"}\n', b'{"uid": "s-1", "port": "3130", "placement": {"zone": "z"}}']
    )
    assert [type(i) for i in listed + streamed] == [Item, Item, Item]
    assert [(i.index, i.where) for i in streamed] == [(1, "instance_stream[0]"), (2, "instance_stream[1]")]
    first, second = streamed
    assert (first.provider, first.port, first.state) == ("l", 8080, "present")  # inherited, defaulted
    assert (second.port, second.placement.zone) == (3130, "z")  # core's conversion of "3130"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"uid": "u", "name": "Not_A_Label"}', "instance_stream[0].name: 'Not_A_Label' is not a DNS label"),
        (b'{"uid": "u", "state": "gone"}', "instance_stream[0].state: value of state must be one of"),
        (b'{"uid": "u", "wait": [1]}', "instance_stream[0].wait: argument 'wait' is of type list"),
        (b'{"uid": "u", "port": "inf"}', "instance_stream[0].port: must be a whole number, not infinity"),
        (b'{"uid": "u", "port": 0}', "instance_stream[0].port: 0 is not a port (1-65535)"),
        (b'{"uid": {"a": 1}}', "instance_stream[0].uid: must be a string, not <dict of 1>"),
        (b'{"uid": "u", "colour": "red"}', "instance_stream[0].colour: unsupported parameter (supported: "),
        (b'{"uid": "u", "placement": {"rack": 4}}', "instance_stream[0].placement: placement.rack."),
        (b'{"uid": "u", "auth": {"username": "a:b", "password": "p"}}', "instance_stream[0].auth.username:"),
        (b'{"uid": "u", "provider": "elsewhere"}', "instance_stream[0].provider: "),
        (b'{"state": "present"}', "instance_stream[0].uid: required when state=present"),
        (b'{"uid": "u", "id": "../../etc"}', "instance_stream[0].id: malformed local provider id"),
    ],
)
def test_an_invalid_line_is_a_failed_item_naming_its_field(tmp_path, line, message):
    _pm, _listed, (item,) = _streamed(tmp_path, [line + b"\n"])
    assert isinstance(item, InvalidItem) and item.index == 1, item
    assert item.message.startswith(message), item.message


def test_a_line_that_is_not_a_json_object_is_never_quoted(tmp_path):
    lines = [b"cloud_init: " + SECRET.encode() + b"\n", b"\n", b'["%s"]\n' % SECRET.encode(), b"\xff\xfe\n"]
    _pm, _listed, streamed = _streamed(tmp_path, [*lines, b'{"uid": "after-the-bad-ones"}\n'])
    assert [i.message for i in streamed[:4]] == [
        "instance_stream[%d]: not a JSON object" % k for k in range(4)
    ]
    assert all(i.values == {} for i in streamed[:4])
    assert SECRET not in repr(streamed)
    assert isinstance(streamed[4], Item) and streamed[4].index == 5  # the next line is read as usual


def test_an_item_naming_an_instance_an_earlier_item_named_is_invalid(tmp_path):
    lines = [
        b'{"uid": "listed-0"}\n',  # the listed item's instance
        b'{"uid": "s"}\n',
        b'{"uid": "s", "state": "absent"}\n',  # an earlier streamed one's, the other way
        b'{"uid": "t", "name": "proxy-named"}\n',
        b'{"uid": "other", "name": "proxy-named"}\n',  # the same name, another uid
    ]
    _pm, _listed, streamed = _streamed(tmp_path, lines)
    assert [type(i) for i in streamed] == [InvalidItem, Item, InvalidItem, Item, InvalidItem]
    assert streamed[0].message.startswith("instance_stream[0]: repeats an earlier item for the same instance")
    assert streamed[0].message.endswith(": instances[0]); give each instance once")
    assert streamed[2].message.startswith("instance_stream[2]: contradicts an earlier item")
    assert "instance_stream[1])" in streamed[2].message
    assert "name 'proxy-named': instance_stream[3])" in streamed[4].message


def test_a_listed_pair_that_repeats_itself_is_repeated_by_a_streamed_item_too(tmp_path):
    listed = [{"uid": "twice"}, {"uid": "twice"}]
    _pm, before, (item,) = _streamed(tmp_path, [b'{"uid": "twice"}\n'], instances=listed)
    assert [type(i) for i in before] == [InvalidItem, InvalidItem]
    assert isinstance(item, InvalidItem) and "repeats an earlier item" in item.message


def test_secrets_of_a_line_are_no_log_values_as_soon_as_it_is_read_valid_or_not(tmp_path):
    valid = b'{"uid": "s", "cloud_init": "%s", "auth": {"username": "u", "password": "%s"}}\n' % (
        SECRET.encode(),
        PASSWORD.encode(),
    )
    invalid = b'{"uid": "t", "port": "no", "cloud_init": "%s-2", "colour": "%s-3"}\n' % (
        SECRET.encode(),
        SECRET.encode(),
    )
    pm, _listed, streamed = _streamed(tmp_path, [valid, invalid])
    assert {SECRET, PASSWORD, SECRET + "-2"} <= pm.module.no_log_values
    assert SECRET + "-3" not in pm.module.no_log_values  # an unknown field is marked nothing, as by core
    assert streamed[0].cloud_init == SECRET and streamed[0].auth is not None
    assert isinstance(streamed[1], InvalidItem) and "instance_stream[1].port" in streamed[1].message
    assert SECRET not in streamed[1].message


def test_a_secret_core_quotes_in_a_message_is_masked(tmp_path):
    """Core names an unsupported key of ``auth``: a password pasted as that key is masked
    when it is the password too."""
    line = b'{"uid": "s", "auth": {"username": "u", "password": "%s", "%s": 1}}\n' % (
        PASSWORD.encode(),
        PASSWORD.encode(),
    )
    _pm, _listed, (item,) = _streamed(tmp_path, [line])
    assert isinstance(item, InvalidItem) and "instance_stream[0].auth: " in item.message
    assert PASSWORD not in item.message and "********" in item.message


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_streamed_item_is_worked_on_while_the_iterator_still_waits_for_the_next(concurrency):
    listed_started, first_worked = threading.Event(), threading.Event()
    heard = []

    def more():
        assert listed_started.wait(10), "the listed item waited for the stream"
        yield "streamed-0"
        # Still inside the iterator: the next line has not come, and the item read must be at work.
        assert first_worked.wait(10), "a streamed item waited for the iterator to end"
        yield "streamed-1"

    def work(item):
        if item == "listed-0":
            listed_started.set()
        if item == "streamed-0":
            first_worked.set()
        return item.upper()

    def on_done(index, result):
        heard.append((index, result))

    results = batch.run(["listed-0"], work, lambda item, exc: None, concurrency, on_done=on_done, more=more())
    assert results == ["LISTED-0", "STREAMED-0", "STREAMED-1"]  # in index order
    assert sorted(heard) == [(0, "LISTED-0"), (1, "STREAMED-0"), (2, "STREAMED-1")]  # global indexes


def test_without_more_a_list_runs_as_before():
    assert batch.run([], str, lambda item, exc: None) == []
    assert batch.run([1, 2], str, lambda item, exc: "failed", 1) == ["1", "2"]
    assert batch.run([1, 2, 3], lambda i: 1 / (i - 2), lambda item, exc: "failed", 3) == [-1.0, "failed", 1.0]


def _refused(tmp_path, **given) -> dict:
    args = {
        "providers": _providers(tmp_path),
        "provider": "l",
        "instances": [{"uid": "refused-0"}],
        "invalid_items": "fail_item",
    }
    args.update(given)
    answer = run_module(tmp_path, MODULE, args)
    assert answer.get("failed") and answer["error_class"] == "permanent", answer
    assert "results" not in answer
    assert not (tmp_path / "state").exists() or not any((tmp_path / "state").iterdir())
    return answer


def test_a_path_that_is_no_pipe_is_refused_before_anything_is_touched(tmp_path):
    plain = tmp_path / "items.jsonl"
    plain.write_text('{"uid": "from-a-file"}\n')
    answer = _refused(tmp_path, instance_stream=str(plain))
    assert (
        answer["msg"]
        == "instance_stream: %s is not a pipe or FIFO (a regular file or other kind is refused)" % plain
    )
    answer = _refused(tmp_path, instance_stream=str(tmp_path / "missing"))
    assert answer["msg"].startswith("instance_stream: cannot use ")


def test_the_single_form_and_fail_all_are_refused(tmp_path):
    fifo = str(tmp_path / "items")
    os.mkfifo(fifo, 0o600)
    answer = _refused(tmp_path, instance_stream=fifo, instances=None, uid="single")
    assert answer["msg"] == "instance_stream: only with instances (the batch form)"
    answer = _refused(tmp_path, instance_stream=fifo, invalid_items="fail_all")
    assert answer["msg"].startswith("instance_stream: only with invalid_items: fail_item")
