"""A run's dead man's switch: kills the run's processes when the leader stops renewing.

Started by the executor beside every run while leader election is on, as its own process, so it
keeps working when the controller itself is frozen (SIGSTOP) or dead: it watches the heartbeat
file the lease renewals touch, and once that is older than the renew deadline it kills every
process of the run (process_tree) and records it in the run log. Another replica can take the
Lease only after the (longer) lease duration, so by then this replica's run has stopped.

``python -m egress_proxies_controller.runs.watchdog RUN_ID HEARTBEAT MAX_AGE [RUN_LOG IDENTITY]``
"""

from __future__ import annotations

import json
import os
import sys
import time

from . import process_tree


def main(argv: list) -> int:
    run_id, heartbeat, max_age = argv[0], argv[1], float(argv[2])
    run_log, identity = (argv[3], argv[4]) if len(argv) >= 5 else ("", "")
    while True:
        try:
            age = time.time() - os.stat(heartbeat).st_mtime
        except OSError:
            age = float("inf")
        if age > max_age:
            killed = process_tree.kill_run(run_id)
            if run_log:
                line = {
                    "what": "killed",
                    "run": run_id,
                    "identity": identity,
                    "time": time.time(),
                    "n": killed,
                }
                with open(run_log, "a") as handle:
                    handle.write(json.dumps(line) + "\n")
            return 0
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
