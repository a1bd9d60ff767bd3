"""Benchmark: one proxy-health probe round over N proxies, concurrent against sequential.

Stands up N listeners on their own loopback addresses (one asyncio process serving them all,
answering every request like a proxy would: ``HTTP/1.1 200``), then times the controller's
``ProxyHealthEngine`` probing: TCP connect only, and TCP connect plus a GET through the
"proxy", with the engine's default concurrency (100) and with concurrency 1 (what a loop over
the proxies would do). The probe interval is 30 s: a round must fit well inside it.

The listeners answer the GET after ``--latency`` (a remote proxy's round trip) and ``--hang`` of
them never answer (the probe times out after 2 s): what makes a sequential round slow.

Usage: .venv/bin/python bench/probe_round.py [--count 1000] [--latency 0.05] [--hang 10]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "controller"))

from egress_proxies_controller.loops.proxy_probes import probe

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"


async def _serve(addresses, port, ready, latency, hanging):
    async def handle(reader, writer):
        try:
            await reader.readuntil(b"\r\n\r\n")
            local = writer.get_extra_info("sockname")[0]
            await asyncio.sleep(3600 if local in hanging else latency)  # a hung proxy never answers
            writer.write(RESPONSE)
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    servers = [await asyncio.start_server(handle, addr, port, backlog=256) for addr in addresses]
    ready.set()
    await asyncio.gather(*(s.serve_forever() for s in servers))


def start_listeners(count: int, port: int, latency: float, hang: int) -> list:
    base = "127.%d.%d" % (random.randint(100, 250), random.randint(0, 200))
    addresses = [
        "%s.%d" % (base[: base.rindex(".")] + "." + str(int(base.rsplit(".", 1)[1]) + i // 250), 1 + i % 250)
        for i in range(count)
    ]
    ready = threading.Event()
    hanging = set(addresses[:hang])
    threading.Thread(
        target=lambda: asyncio.run(_serve(addresses, port, ready, latency, hanging)), daemon=True
    ).start()
    ready.wait(60)
    return addresses


def round_seconds(addresses, port, concurrency, url) -> tuple:
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(lambda a: probe(a, port, 2.0, url), addresses))
    return time.monotonic() - started, sum(r.healthy for r in results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument(
        "--latency",
        type=float,
        default=0.05,
        help="seconds each proxy takes to answer the GET (a remote proxy's round trip)",
    )
    parser.add_argument("--hang", type=int, default=10, help="proxies that never answer (probe timeout 2 s)")
    args = parser.parse_args()
    port = 3128
    addresses = start_listeners(args.count, port, args.latency, args.hang)
    print("%d listeners up; probing (engine concurrency 100 vs sequential)" % len(addresses), flush=True)
    rows = []
    for label, url in (("tcp connect", ""), ("tcp + GET via proxy", "http://example.invalid/health")):
        concurrent_s, ok_c = round_seconds(addresses, port, 100, url)
        sequential_s, ok_s = round_seconds(addresses, port, 1, url)
        rows.append((label, concurrent_s, ok_c, sequential_s, ok_s))
    print()
    print(
        "one probe round over %d proxies (GET answered after %g s, %d hung), seconds (healthy answers)"
        % (args.count, args.latency, args.hang)
    )
    print("%-22s %16s %16s %8s" % ("probe", "concurrent(100)", "sequential", "ratio"))
    for label, c, ok_c, s, ok_s in rows:
        print("%-22s %10.2f (%4d) %10.2f (%4d) %7.1fx" % (label, c, ok_c, s, ok_s, s / c))


if __name__ == "__main__":
    main()
