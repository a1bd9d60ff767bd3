"""Benchmark: what proxy authentication costs per poll.

A Proxy with ``spec.auth`` is polled with ``proxy_instance state: present`` carrying its
credentials; the provider compares them with the instance's password file by verifying the
password against the stored SHA-512 crypt hash (5000 rounds, pure hashlib), the only way to tell
without keeping a cleartext or a fast fingerprint of it anywhere. This prints the time of one
verification and what a fleet costs per running poll (the controller's ``--running-poll``).

Usage: .venv/bin/python bench/auth_verify.py [--count 1000] [--poll 60] [--samples 50]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".venv", "collections"))

from ansible_collections.crawl.egress_proxies.plugins.module_utils.helpers.proxy_auth import Auth  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000, help="proxies with auth")
    parser.add_argument("--poll", type=float, default=60.0, help="seconds between polls of one proxy")
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()
    auth = Auth("crawler", "a password of twenty-four")
    line = auth.passwd_line()
    started = time.perf_counter()
    for _sample in range(args.samples):
        assert auth.matches(line)
    per = (time.perf_counter() - started) / args.samples
    fleet = per * args.count
    print("one verification: %.1f ms" % (per * 1000))
    print(
        "%d proxies, one poll each every %gs: %.1f CPU-seconds per poll interval (%.0f%% of one core)"
        % (args.count, args.poll, fleet, 100 * fleet / args.poll)
    )


if __name__ == "__main__":
    main()
