"""proxy/provider_slots.py: each provider's run slots and the keys waiting for one (issue 30:
the manager's provider slots apart from its dispatch)."""

from __future__ import annotations

from egress_proxies_controller.proxy import provider_slots
from egress_proxies_controller.proxy.held_keys import HeldKeys
from egress_proxies_controller.proxy.provider_slots import ProviderSlots


def slots(gather: float = 5.0, batch_max: int = 3) -> ProviderSlots:
    return ProviderSlots(HeldKeys(), runs_in_flight=2, batch_max=batch_max, gather_while_busy=gather)


def test_work_of_an_idle_provider_does_not_gather_and_a_busy_ones_does_until_a_run_is_full():
    s = slots()
    with s.lock:
        assert not s.should_gather("p", 1)
        s.started("p")
        assert s.should_gather("p", 2)
        s.wait("p", ["ns/a", "ns/b"])
        assert not s.should_gather("p", 1)  # 2 waiting + 1 arriving fill a run of 3


def test_waiting_keys_are_held_by_their_list_and_taken_once():
    s = slots()
    with s.lock:
        s.wait("p", ["ns/a"])
        s.wait("p", ["ns/b"])
    assert s.held.keys["ns/a"] is s.held.keys["ns/b"] and s.waiting("p") == ["ns/a", "ns/b"]
    slot = s.of("p")
    assert slot.acquire(blocking=False)
    assert s.take_waiting("p", slot) == ["ns/a", "ns/b"]
    assert not s.any_waiting()


def test_a_slot_with_no_waiting_keys_is_freed():
    s = slots()
    slot = s.of("p")
    assert slot.acquire(blocking=False) and slot.acquire(blocking=False)
    assert not slot.acquire(blocking=False)  # both of its slots taken
    assert s.take_waiting("p", slot) is None
    assert slot.acquire(blocking=False)  # one given back


def test_keys_that_waited_long_enough_take_a_free_slot_once(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(provider_slots.time, "monotonic", lambda: clock[0])
    s = slots(gather=5.0)
    with s.lock:
        s.wait("p", ["ns/a"])
        clock[0] += 4.9
        assert s.overdue() == []  # not yet
    clock[0] += 0.2
    with s.lock:
        ready = s.overdue()
        assert [p for p, _slot in ready] == ["p"]
        assert s.overdue() == []  # taken: not flushed twice


def test_a_full_provider_is_not_flushed_until_a_slot_frees(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(provider_slots.time, "monotonic", lambda: clock[0])
    s = slots(gather=1.0)
    slot = s.of("p")
    assert slot.acquire(blocking=False) and slot.acquire(blocking=False)
    with s.lock:
        s.wait("p", ["ns/a"])
    clock[0] = 2.0
    with s.lock:
        assert s.overdue() == []  # waited long enough, but both slots are taken
    slot.release()
    with s.lock:
        assert [p for p, _slot in s.overdue()] == ["p"]
