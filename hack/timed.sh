#!/usr/bin/env bash
# Runs one step of `make test` and says how long it took and how much CPU it used: "==> STEP"
# before, "<== STEP: N s, C CPU-s (ok|FAILED)" after, so CI's log gives every step's wall time
# and CPU-seconds (user+system of everything the step ran; wall time alone does not show where
# two cores go). Usage: hack/timed.sh STEP CMD...
set -uo pipefail
step=$1
shift
printf '==> %s\n' "$step"
started=$(date +%s)
"$@"
status=$?
outcome=ok
[ "$status" -eq 0 ] || outcome="FAILED (exit $status)"
# `times` prints the shell's own user/system time, then its children's: the second line is the
# step. It must run in this shell (in a pipe or $(...) it would report a subshell's, zero).
times_file=$(mktemp)
times >"$times_file"
cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, t, "m"); n += t[1] * 60 + t[2] } printf "%.0f", n }' "$times_file")
rm -f "$times_file"
printf '<== %s: %ss, %s CPU-s (%s)\n' "$step" "$(($(date +%s) - started))" "$cpu" "$outcome"
exit "$status"
