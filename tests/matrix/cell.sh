#!/usr/bin/env bash
# Runs one cell of the version matrix (tests/matrix/versions.env): with that ansible-core's own
# virtualenv (venv.sh, cached per machine) and its Python,
#   1. sanity: ansible-test sanity (validate-modules, import, compile) for that Python;
#   2. smoke: real ansible-playbook runs on a local provider of the cell's own loopback /24
#      (127.78.<minor>.0/24): smoke.yml (every module, check and diff mode, a proxy_pool round,
#      the `proxy` role), the inventory plugin (--graph and --list, a constructed group), one
#      controller run through ansible-runner (controller_run.py), tests/integration/
#      test_core_versions.py on this cell, the ready playbook playbooks/proxies_delete.yml, and
#      smoke_end.yml (nothing left).
# The collection under test is this tree, linked into a collections directory of the run's own
# beside the cell's (kubernetes.core, ansible.posix), so two checkouts share the cached venv.
#
# Output: progress on stdout, each part's duration, and one result line in
# tests/output/matrix/<minor>.result: "<minor> <ansible-core> <python> <status> sanity=<s>s
# smoke=<s>s [what failed]" where status is passed, FAILED or NOT-RUN (no suitable interpreter:
# the line then says what to install). Exit status 0 passed, 3 not run, 1 failed.
#
# Usage: tests/matrix/cell.sh MINOR     (e.g. tests/matrix/cell.sh 2.16)
# Knobs: MATRIX_PARTS ("sanity smoke", default both), MATRIX_KEEP=1 keeps the work directory.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
minor=${1:?usage: cell.sh MINOR}
parts=${MATRIX_PARTS:-sanity smoke}
out=$root/tests/output/matrix
mkdir -p "$out"
result=$out/$minor.result
rm -f "$result"
say() { printf '[matrix %s %s] %s\n' "$minor" "$(date +%H:%M:%S)" "$*"; }

venv_log=$out/$minor.venv.log
started=$(date +%s)
venv=$("$here/venv.sh" "$minor" 2>"$venv_log" | tail -n 1)
status=${PIPESTATUS[0]}
if [ "$status" -ne 0 ]; then
  # venv.sh's last stderr line says why (for a missing interpreter: what to install).
  why=$(tail -n 1 "$venv_log")
  if [ "$status" -eq 3 ]; then
    echo "$minor - - NOT-RUN $why" >"$result"
    say "not run: $why"
    exit 3
  fi
  echo "$minor - - FAILED the virtualenv did not build ($venv_log)" >"$result"
  say "FAILED: the virtualenv did not build; see $venv_log"
  tail -n 20 "$venv_log"
  exit 1
fi
core=$("$venv/bin/python" -c 'import ansible.release as r; print(r.__version__)')
python_version=$("$venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
python_full=$("$venv/bin/python" -c 'import platform; print(platform.python_version())')
say "ansible-core $core on Python $python_full ($venv; ready in $(($(date +%s) - started))s)"

work=$(mktemp -d "${TMPDIR:-/tmp}/egress-matrix-$minor.XXXXXX")
state=$work/state
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
  # Whatever a failed step left running: the cell's Squids, by pid (tests/squid_procs.py).
  "$root/.venv/bin/python" -c 'import sys; sys.path.insert(0, sys.argv[1]); import squid_procs; \
    killed = squid_procs.kill_all(sys.argv[2]); killed and print("killed leftover Squids:", killed)' \
    "$root/tests" "$state/instances" 2>/dev/null || true
  if [ "${MATRIX_KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

failed=()
# Each part's figure for the result line: "-" not run, "52s" passed, "52s-failed" failed.
sanity_s=- smoke_s=-

run_sanity() {
  local collection t0
  t0=$(date +%s)
  # shellcheck source=../../hack/sanity_lib.sh
  . "$root/hack/sanity_lib.sh"
  collection=$(copy_collection "$root" "$work/sanity") || return 1
  provide_pip_bootstrap "$venv" "$python_version" || return 1
  (
    cd "$collection" &&
      PATH="$venv/bin:$PATH" "$venv/bin/ansible-test" sanity --venv --requirements --color no \
        --python "$python_version" --test validate-modules --test import --test compile
  )
  local rc=$?
  sanity_s=$(($(date +%s) - t0))s
  [ $rc -eq 0 ] || sanity_s=$sanity_s-failed
  say "sanity: ${sanity_s%-failed} ($([ $rc -eq 0 ] && echo ok || echo "FAILED rc=$rc"))"
  return $rc
}

# shellcheck disable=SC2317  # run through smoke_step
# The cell's ansible, with this tree's collection first and the cell's dependencies after it.
ansible_env() {
  env PATH="$venv/bin:$PATH" \
    ANSIBLE_COLLECTIONS_PATH="$work/collections:$venv/collections" \
    ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false ANSIBLE_NOCOLOR=1 NO_COLOR=1 \
    ANSIBLE_LOCALHOST_WARNING=false ANSIBLE_INVENTORY_UNPARSED_WARNING=false \
    ANSIBLE_RETRY_FILES_ENABLED=false "$@"
}

smoke_step() {
  local what=$1 t0
  t0=$(date +%s)
  shift
  say "smoke: $what"
  if "$@" >"$work/step.log" 2>&1; then
    say "smoke: $what ok ($(($(date +%s) - t0))s)"
    return 0
  fi
  say "smoke: $what FAILED ($(($(date +%s) - t0))s); its last lines:"
  grep -vE '^\s*$' "$work/step.log" | tail -n 25 | sed 's/^/    /'
  failed+=("smoke: $what")
  return 1
}

run_smoke() {
  local t0 providers=$work/providers.yml smoke_a
  t0=$(date +%s)
  mkdir -p "$work/collections/ansible_collections/crawl"
  ln -sfn "$root" "$work/collections/ansible_collections/crawl/egress_proxies"
  # The cell's own /24: 127.78.16.0/24 for 2.16 and so on, so cells never share addresses.
  printf 'installation: matrix-%s\nproviders:\n  - name: local\n    type: local\n    local:\n      stateDir: %s\n      addressRange: 127.78.%s.0/24\n' \
    "${minor//./-}" "$state" "${minor#*.}" >"$providers"
  cat >"$work/smoke.proxies.yml" <<YAML
plugin: crawl.egress_proxies.proxies
providers_file: $providers
strict: true
groups:
  smoke_owned: egress_proxies.uid.startswith('smoke-')
keyed_groups:
  - key: egress_proxies.state
    prefix: smoke_state
YAML
  printf 'egress_proxies:\n  hosts:\n    smoke-a:\n    smoke-ctl:\n' >"$work/ready-inventory.yml"
  smoke_step "smoke.yml (every module, check and diff mode, a pool round, the proxy role)" \
    ansible_env ansible-playbook "$here/smoke.yml" -e "smoke_providers_file=$providers" || return 1
  smoke_a=local/$(ls "$state/instances")
  smoke_step "the inventory plugin: --graph and --list, constructed groups (inventory_check.py)" \
    ansible_env "$venv/bin/python" "$here/inventory_check.py" "$work/smoke.proxies.yml" "$smoke_a" || return 1
  mkdir -p "$work/controller"
  smoke_step "one controller run through ansible-runner (controller_run.py)" \
    ansible_env PYTHONPATH="$root/controller" "$venv/bin/python" "$here/controller_run.py" \
    "$providers" "$work/collections:$venv/collections" "$work/controller" "$smoke_a" || return 1
  # tests/integration/test_core_versions.py (the direct start against ansible-core's ordinary
  # path, module by module) on this cell, through the development venv's pytest: it takes a
  # virtualenv with this tree in its collections/, so it gets a view of the cached one: every
  # entry linked (bin, lib, pyvenv.cfg: its python is a virtualenv's from there too) but
  # collections/, which holds the cell's dependencies and this tree.
  mkdir -p "$work/view/collections/ansible_collections"
  for entry in "$venv"/*; do
    [ "${entry##*/}" = collections ] || ln -sfn "$entry" "$work/view/${entry##*/}"
  done
  for dependency in "$venv"/collections/ansible_collections/*; do
    ln -sfn "$dependency" "$work/view/collections/ansible_collections/${dependency##*/}"
  done
  ln -sfn "$work/collections/ansible_collections/crawl" "$work/view/collections/ansible_collections/crawl"
  smoke_step "tests/integration/test_core_versions.py (direct start against ansible-core's ordinary path)" \
    env -C "$root" EGRESS_PROXIES_MATRIX_VENV="$work/view" "$root/.venv/bin/python" -m pytest -p no:cacheprovider \
    -q "$root/tests/integration/test_core_versions.py" || return 1
  smoke_step "the ready playbook playbooks/proxies_delete.yml" \
    ansible_env ansible-playbook -i "$work/ready-inventory.yml" "$root/playbooks/proxies_delete.yml" \
    -e "egress_proxies_providers_file=$providers" -e egress_proxies_provider=local || return 1
  smoke_step "smoke_end.yml (nothing left)" \
    ansible_env ansible-playbook "$here/smoke_end.yml" -e "smoke_providers_file=$providers" || return 1
  smoke_s=$(($(date +%s) - t0))s
}

for part in $parts; do
  case $part in
    sanity) run_sanity || failed+=("sanity") ;;
    smoke)
      smoke_t0=$(date +%s)
      run_smoke || smoke_s=$(($(date +%s) - smoke_t0))s-failed
      ;;
    *) echo "cell.sh: unknown part $part (sanity, smoke)" >&2; exit 2 ;;
  esac
done

if [ ${#failed[@]} -eq 0 ]; then
  echo "$minor $core $python_full passed sanity=$sanity_s smoke=$smoke_s" >"$result"
  say "passed"
  exit 0
fi
echo "$minor $core $python_full FAILED sanity=$sanity_s smoke=$smoke_s (failed: ${failed[*]})" >"$result"
say "FAILED: ${failed[*]}"
exit 1
