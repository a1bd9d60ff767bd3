"""tests/listen_ports.free_port: a port is never handed out twice by one process, and pytest-xdist
workers choose from slices that do not meet (a controller of test_e2e_shards.py could not bind a
metrics port another choice had been given too)."""

from __future__ import annotations

import listen_ports


def test_a_process_never_hands_out_a_port_twice():
    ports = [listen_ports.free_port() for _choice in range(600)]
    assert len(set(ports)) == len(ports)
    assert all(p in listen_ports.LISTEN_PORTS for p in ports)


def test_workers_and_other_processes_choose_from_slices_that_do_not_meet():
    slices = {name: set(listen_ports.ports_of(listen_ports.slot(name))) for name in ("gw0", "gw1", "gw6", "")}
    assert len({listen_ports.slot(name) for name in slices}) == 4
    names = list(slices)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not slices[a] & slices[b], (a, b)
    assert all(len(s) > 1000 for s in slices.values())
