#!/usr/bin/env bash
# Prints the path of a working Python interpreter of one of the given minors (tried in order),
# or exits 1 saying what it looked for. Nothing is hard-coded: it looks in the system's own
# directories first (/usr/bin, /usr/local/bin: Debian's python3.11 before a pyenv build of the
# same minor), then on PATH (pyenv's shims included, which only answer for a version pyenv has
# selected, hence each candidate is run), then in every version pyenv has installed
# (`pyenv root`/versions). A candidate counts only if it runs, reports that minor and has the
# venv module; what is printed is the interpreter's own sys.executable (never a shim).
# Usage: tests/matrix/find_python.sh 3.12 [3.13 ...]
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: find_python.sh MINOR..." >&2; exit 2; }

candidates() {
  local minor=$1 root dir
  echo "/usr/bin/python$minor"
  echo "/usr/local/bin/python$minor"
  command -v "python$minor" 2>/dev/null
  if command -v pyenv >/dev/null 2>&1 && root=$(pyenv root 2>/dev/null); then
    # Newest patch first.
    for dir in $(find "$root/versions" -mindepth 1 -maxdepth 1 -name "$minor*" 2>/dev/null | sort -rV); do
      echo "$dir/bin/python$minor"
    done
  fi
}

for minor in "$@"; do
  while read -r candidate; do
    [ -x "$candidate" ] || continue
    found=$("$candidate" -c 'import sys, venv; print("%d.%d" % sys.version_info[:2], sys.executable)' 2>/dev/null) || continue
    if [ "${found%% *}" = "$minor" ]; then
      echo "${found#* }"
      exit 0
    fi
  done < <(candidates "$minor")
done
echo "find_python.sh: no working Python $* (looked in /usr/bin, /usr/local/bin, on PATH and in pyenv's versions)" >&2
exit 1
