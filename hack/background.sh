#!/usr/bin/env bash
# Runs the test binaries' builds (the Kubernetes control plane, its kubectl, Toxiproxy) in the
# background of `make test`, so their cold build (6-18 minutes of Go compilation) overlaps the
# steps that do not need them: bootstrap, lint, sanity and the part of pytest that runs before the
# first test asking for the control plane (tests/conftest.py orders those last). The builds run niced, so the steps
# in front keep their share of the two cores; a test that needs a binary waits for it on the
# build's own lock (build.sh and build_toxiproxy.sh take it first), never on this script.
#
# Usage: hack/background.sh start | wait
#   start  launches the builds, their output to tests/output/background-build.log;
#   wait   waits for them, prints that log and fails if a build failed (`make test`'s last
#          check that nothing is left running and nothing went wrong unseen).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/tests/output
log=$out/background-build.log
pidfile=$out/background-build.pid
rcfile=$out/background-build.rc

case ${1:-} in
start)
  mkdir -p "$out"
  rm -f "$rcfile"
  (
    status=0
    # The build scripts print their bin directory on stdout: not wanted in the log ($1 is
    # expanded by the inner shell, hence the single quotes).
    # shellcheck disable=SC2016
    nice -n 10 "$root/hack/timed.sh" "Kubernetes test control plane binaries (background)" \
      bash -c '"$1" >/dev/null' - "$root/tests/cluster/build.sh" || status=1
    # shellcheck disable=SC2016
    nice -n 10 "$root/hack/timed.sh" "kubectl for the installed-controller test (background)" \
      bash -c '"$1" kubectl >/dev/null' - "$root/tests/cluster/build.sh" || status=1
    # shellcheck disable=SC2016
    nice -n 10 "$root/hack/timed.sh" "Toxiproxy for the fault matrix (background)" \
      bash -c '"$1" >/dev/null' - "$root/tests/cluster/build_toxiproxy.sh" || status=1
    echo "$status" >"$rcfile"
  ) >"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  printf '==> test binaries building in the background (pid %s, log %s)\n' "$!" "${log#"$root"/}"
  ;;
wait)
  [ -s "$pidfile" ] || { echo "background.sh: nothing was started" >&2; exit 2; }
  pid=$(cat "$pidfile")
  while kill -0 "$pid" 2>/dev/null; do sleep 1; done
  printf '==> the background builds (log %s):\n' "${log#"$root"/}"
  grep -E '^(==>|<==)|built in|failed' "$log" | sed 's/^/    /'
  rm -f "$pidfile"
  [ "$(cat "$rcfile" 2>/dev/null)" = 0 ] || { echo "background.sh: a background build failed; see $log" >&2; exit 1; }
  ;;
*)
  echo "usage: hack/background.sh start|wait" >&2
  exit 2
  ;;
esac
