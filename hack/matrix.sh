#!/usr/bin/env bash
# The version matrix of `make test` (tests/matrix/, docs/testing.md "The version matrix"): every
# cell of tests/matrix/versions.env (or those MATRIX_CELLS names) through tests/matrix/cell.sh,
# one after the other, each as a timed step, then a summary.
#
# Usage: hack/matrix.sh run | start | wait
#   run    runs the cells in the foreground and prints the summary (`make matrix`);
#   start  runs them in the background, niced, output to tests/output/matrix/matrix.log (`make
#          test` starts it after bootstrap: a cell is mostly ansible-playbook processes waiting on
#          Squid and ansible-test's single-core linters, which fit beside the pytest session's
#          waiting on polls and boots);
#   wait   waits for that run, prints each cell's steps and the summary (`make test`'s last lines).
# The summary names every cell with its ansible-core, Python, sanity and smoke times; a cell that
# could not run (no suitable Python on this machine) is listed as NOT RUN with what to install,
# and is not passed: the exit status is non-zero when any cell failed or could not run. Cells
# left out with MATRIX_ONLY are named as left out (the caller's explicit choice).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/tests/output/matrix
log=$out/matrix.log
pidfile=$out/matrix.pid
rcfile=$out/matrix.rc
cellsfile=$out/matrix.cells # the cells a background run was started with, for `wait`
# shellcheck source=../tests/matrix/versions.env
. "$root/tests/matrix/versions.env"
cells=${MATRIX_ONLY:-$MATRIX_CELLS}

summary() {
  local cell line status=0 minor core python state rest
  printf '==> version matrix (tests/matrix/versions.env; results in %s):\n' "${out#"$root"/}"
  printf '    %-6s %-9s %-8s %-8s %s\n' cell core python result "times / why"
  for cell in $MATRIX_CELLS; do
    if ! [[ " $cells " == *" $cell "* ]]; then
      printf '    %-6s %-9s %-8s %-8s %s\n' "$cell" - - "LEFT OUT" "not in MATRIX_ONLY=\"$cells\""
      continue
    fi
    line=$(cat "$out/$cell.result" 2>/dev/null) || line="$cell - - FAILED no result (the cell did not finish)"
    read -r minor core python state rest <<<"$line"
    printf '    %-6s %-9s %-8s %-8s %s\n' "$minor" "$core" "$python" "$state" "$rest"
    [ "$state" = passed ] || status=1
  done
  local missing
  missing=$(grep -h ' NOT-RUN ' "$out"/*.result 2>/dev/null | awk '{print $1}' | tr '\n' ' ')
  if [ -n "$missing" ]; then
    printf '==> version matrix: cells NOT RUN (not passed) for want of an interpreter: %s\n' "$missing"
    echo "    install what each line above names (a Debian package or \`pyenv install\`), then run \`make matrix\`"
  fi
  return $status
}

run() {
  local cell status=0
  mkdir -p "$out"
  rm -f "$out"/*.result
  for cell in $cells; do
    var=MATRIX_${cell//./_}
    [ -n "${!var:-}" ] || { echo "matrix.sh: $cell is not a cell of versions.env ($MATRIX_CELLS)" >&2; return 2; }
    "$root/hack/timed.sh" "matrix cell $cell" "$root/tests/matrix/cell.sh" "$cell" || status=1
  done
  summary || status=1
  return $status
}

case ${1:-} in
run) run ;;
start)
  mkdir -p "$out"
  rm -f "$rcfile"
  echo "$cells" >"$cellsfile"
  (
    nice -n 10 "$root/hack/timed.sh" "version matrix (background)" "$0" run
    echo $? >"$rcfile"
  ) >"$log" 2>&1 </dev/null &
  echo $! >"$pidfile"
  printf '==> version matrix running in the background (pid %s, log %s)\n' "$!" "${log#"$root"/}"
  ;;
wait)
  [ -s "$pidfile" ] || { echo "matrix.sh: nothing was started (hack/matrix.sh start)" >&2; exit 2; }
  pid=$(cat "$pidfile")
  cells=$(cat "$cellsfile" 2>/dev/null || echo "$cells")
  while kill -0 "$pid" 2>/dev/null; do sleep 1; done
  rm -f "$pidfile"
  printf '==> the version matrix (log %s):\n' "${log#"$root"/}"
  grep -E '^(==>|<==)|^\[matrix .*(FAILED|not run|passed|sanity:)' "$log" | grep -v '^==> version matrix' | sed 's/^/    /'
  summary
  [ "$(cat "$rcfile" 2>/dev/null)" = 0 ]
  ;;
*)
  echo "usage: hack/matrix.sh run|start|wait" >&2
  exit 2
  ;;
esac
