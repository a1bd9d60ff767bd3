"""One controller run through ansible-runner, as the controller makes it, for a matrix cell.

tests/matrix/cell.sh runs this with the cell's Python (``PYTHONPATH=controller``), after
smoke.yml left the proxy ``smoke-a``: the controller's own executor (runs/executor.py, its fork
server included) runs its batch playbook (runs/playbooks.py) with the payload the controller
builds (runs/batch.py): one create, streamed through a result pipe (runs/result_pipe.py) as the
Proxy loop streams it, one get by id and one list; every answer is checked, the streamed one
included, so a cell proves the controller's path on that ansible-core and ansible-runner, not
only ansible-playbook's. It creates ``smoke-ctl``, which
cell.sh's ready playbook deletes. Exits non-zero, saying why, on any wrong answer.

Usage: python controller_run.py PROVIDERS_FILE COLLECTIONS_PATH WORK_DIR SMOKE_A_ID
"""

from __future__ import annotations

import sys

from egress_proxies_controller.runs import batch
from egress_proxies_controller.runs.executor import Executor
from egress_proxies_controller.runs.playbooks import PLAYBOOK
from egress_proxies_controller.runs.result_pipe import ResultPipe


def check(results: dict, streamed: list, smoke_a: str) -> list:
    """What is wrong with the run's answers (empty when nothing is)."""
    problems = []
    if [(key, answer.ok) for key, answer in streamed] != [("smoke-ctl", True)]:
        problems.append("result stream: wanted smoke-ctl's answer, got %r" % streamed)
    created = (results.get("instances") or {}).get("results") or []
    if [(r.get("uid"), r.get("failed")) for r in created] != [("smoke-ctl", False)]:
        problems.append("instances: wanted smoke-ctl created, got %r" % created)
    gets = [item.get("instances") for item in (results.get("gets") or {}).get("results") or []]
    if [[i.get("id") for i in found or []] for found in gets] != [[smoke_a]]:
        problems.append("gets: wanted [[%s]], got %r" % (smoke_a, gets))
    lists = [item.get("instances") for item in (results.get("lists") or {}).get("results") or []]
    uids = sorted(i.get("uid") for found in lists for i in found or [])
    if uids != ["smoke-a", "smoke-ctl"]:
        problems.append("lists: wanted smoke-a and smoke-ctl, got %r" % uids)
    return problems


def main() -> int:
    providers_file, collections_path, work_dir, smoke_a = sys.argv[1:5]
    executor = Executor(work_dir, providers_file, collections_path=collections_path)
    streamed = []
    pipe = ResultPipe(["smoke-ctl"], lambda key, answer: streamed.append((key, answer)))
    try:
        payload = batch.payload(
            [{"provider": "local", "uid": "smoke-ctl", "state": "present"}],
            {"local": [("smoke-a", smoke_a)]},
            ["local"],
            concurrency=4,
            call_timeout=60,
            stream=pipe.path,
        )
        results = executor.run_playbook("batch.yml", PLAYBOOK, payload, "matrix smoke")
    finally:
        pipe.close()
        executor.close()
    problems = ([results.failure] if results.failure else []) + check(results, streamed, smoke_a)
    for problem in problems:
        print("controller run: %s" % problem, file=sys.stderr)
    if not problems:
        print("controller run: created smoke-ctl, read smoke-a by id, listed both")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
