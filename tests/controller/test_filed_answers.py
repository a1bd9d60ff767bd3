"""FiledAnswers: an answer is taken once, and only by the object it answers (its uid)."""

from __future__ import annotations

from egress_proxies_controller.proxy.filed_answers import FiledAnswers
from egress_proxies_controller.proxy.reconciler import CREATE, PHASE_CREATE, Action, Answer


def obj(uid: str) -> dict:
    return {"metadata": {"name": "p", "namespace": "ns", "uid": uid}}


ACTION = Action(CREATE, PHASE_CREATE, "local", "", "proxy-x", "uid-1", 1, "h")
ANSWER = Answer(ok=True, instance={"id": "local/proxy-x"})


def test_an_answer_is_taken_once_by_its_own_object():
    filed = FiledAnswers()
    filed.file("ns/p", ACTION, ANSWER)
    assert filed.take("ns/p", obj("uid-1")) == (ACTION, ANSWER)
    assert filed.take("ns/p", obj("uid-1")) is None and len(filed) == 0


def test_an_answer_about_another_object_of_the_name_is_dropped_unread():
    filed = FiledAnswers()
    filed.file("ns/p", ACTION, ANSWER)
    assert filed.take("ns/p", obj("uid-2")) is None
    assert len(filed) == 0


def test_forget_drops_it():
    filed = FiledAnswers()
    filed.file("ns/p", ACTION, ANSWER)
    filed.forget("ns/p")
    assert filed.take("ns/p", obj("uid-1")) is None
