#!/usr/bin/env bash
# Builds the virtualenv of one matrix cell (one ansible-core minor of versions.env), once per
# machine, and prints its directory as the last line of stdout.
#
# Who calls it: tests/matrix/cells.sh (`make matrix`, part of `make test`) and
# bench/runner_cost.py --matrix. What goes in: the cell's ansible-core, ansible-runner, the
# collection's requirements (requirements.txt) and the controller's (controller/requirements.txt
# without its ansible-core/ansible-runner pins), on the cell's Python (find_python.sh), and the
# collections the roles use (hack/collections.txt, installed as hack/install_collections.py does)
# into <venv>/collections. This tree is NOT in it: the cache is shared by every checkout of the
# machine, so each run links its own tree beside it (cells.sh).
#
# Cache: $EGRESS_MATRIX_CACHE (default /var/cache/egress-proxies/matrix)/<minor>-<key>, where
# <key> hashes everything that goes in (the cell's line of versions.env, the requirement and pin
# files, this script, the interpreter's exact version), so a change builds a new one and an
# unchanged one is never rebuilt. The build happens under a lock (concurrent callers wait, then
# reuse it); a virtualenv cannot be moved, so it is built in place and marked complete last: an
# unmarked directory (a build that died) is removed and built again.
#
# Exit status: 0 built or cached; 3 no suitable interpreter on this machine (stderr says which
# Python to install); anything else a failed build.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
minor=${1:?usage: venv.sh MINOR (one of: $MATRIX_CELLS)}
var=MATRIX_${minor//./_}
line=${!var:-}
[ -n "$line" ] || { echo "venv.sh: $minor is not a cell of $here/versions.env ($MATRIX_CELLS)" >&2; exit 2; }
read -r core pythons <<<"$line"
# shellcheck disable=SC2086  # the Python minors are a list of words
python=$("$here/find_python.sh" $pythons) || {
  echo "venv.sh: ansible-core $core needs Python ${pythons// / or }; install one (e.g. the" \
    "Debian package python${pythons%% *} or \`pyenv install ${pythons%% *}\`)" >&2
  exit 3
}
say() { printf '[matrix-venv %s %s] %s\n' "$minor" "$(date +%H:%M:%S)" "$*" >&2; }

cache_root=${EGRESS_MATRIX_CACHE:-/var/cache/egress-proxies/matrix}
key=$({
  echo "$line $MATRIX_ANSIBLE_RUNNER"
  cat "$root/requirements.txt" "$root/controller/requirements.txt" "$root/hack/collections.txt" \
    "$root/hack/install_collections.py" "$0"
  "$python" -c 'import sys; print(sys.version)'
} | sha256sum | cut -c1-16)
dir=$cache_root/$minor-$key
complete() { [ -e "$dir/.complete" ]; }

if complete; then
  echo "$dir"
  exit 0
fi
mkdir -p "$cache_root"
exec 9>"$dir.lock"
flock 9
if complete; then # another caller built it while we waited
  echo "$dir"
  exit 0
fi
start=$(date +%s)
say "building ansible-core $core on $python into $dir"
rm -rf "$dir"
"$python" -m venv "$dir"
pip=("$dir/bin/python" -m pip -q --disable-pip-version-check)
"${pip[@]}" install --upgrade pip
# The controller's own pins of ansible-core and ansible-runner are the development venv's; the
# cell's come from versions.env.
controller_reqs=$(mktemp "${TMPDIR:-/tmp}/matrix-reqs.XXXXXX")
trap 'rm -f "$controller_reqs"' EXIT
grep -vE '^(ansible-core|ansible-runner)([=<>!~ ]|$)' "$root/controller/requirements.txt" >"$controller_reqs"
"${pip[@]}" install "ansible-core==$core" "ansible-runner==$MATRIX_ANSIBLE_RUNNER" \
  -r "$root/requirements.txt" -r "$controller_reqs"
"$dir/bin/python" "$root/hack/install_collections.py" "$root/hack/collections.txt" "$dir/collections" >&2
have=$("$dir/bin/python" -c 'import ansible.release as r; print(r.__version__)')
[ "$have" = "$core" ] || { echo "venv.sh: built ansible-core $have, wanted $core" >&2; exit 1; }
touch "$dir/.complete"
say "built in $(($(date +%s) - start))s"
echo "$dir"
