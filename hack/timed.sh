#!/usr/bin/env bash
# Runs one step of `make test` and says how long it took: "==> STEP" before, "<== STEP: N s
# (ok|FAILED)" after, so CI's log gives every step's duration. Usage: hack/timed.sh STEP CMD...
set -uo pipefail
step=$1
shift
printf '==> %s\n' "$step"
started=$(date +%s)
"$@"
status=$?
outcome=ok
[ "$status" -eq 0 ] || outcome="FAILED (exit $status)"
printf '<== %s: %ss (%s)\n' "$step" "$(($(date +%s) - started))" "$outcome"
exit "$status"
