#!/usr/bin/env bash
# Runs galaxy-importer (what Galaxy and Automation Hub run on upload) on the collection tarball
# `ansible-galaxy collection build` makes from this tree, and fails on any error or warning it
# logs, so a tarball that would upload with warnings never passes `make test`.
#
# Its containerised ansible-test is switched off in its config file (RUN_ANSIBLE_TEST = False:
# it needs podman or docker; ansible-test sanity runs in hack/sanity.sh and in every matrix
# cell); its ansible-lint (offline, as on Galaxy: only this collection installed) and its
# documentation checks (ansible-doc of every plugin) are kept.
#
# The importer lives in a virtualenv of its own (its ansible-core and ansible-lint pins are not
# the development venv's), built once per machine under $EGRESS_IMPORTER_CACHE (default
# /var/cache/egress-proxies/galaxy-importer)/<key>, where <key> hashes hack/galaxy-importer.txt,
# this script and the Python's version; a build happens under a lock and is marked complete last.
# Usage: hack/galaxy_importer.sh (from `make galaxy-importer`, part of `make test`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
cache_root=${EGRESS_IMPORTER_CACHE:-/var/cache/egress-proxies/galaxy-importer}
key=$({ cat "$root/hack/galaxy-importer.txt" "$0"; "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16)
venv=$cache_root/$key
say() { printf '==> galaxy-importer: %s\n' "$*"; }

if [ ! -e "$venv/.complete" ]; then
  mkdir -p "$cache_root"
  exec 9>"$venv.lock"
  flock 9
  if [ ! -e "$venv/.complete" ]; then
    say "building its virtualenv in $venv"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/hack/galaxy-importer.txt"
    touch "$venv/.complete"
  fi
  exec 9>&-
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/egress-galaxy-importer.XXXXXX")
trap 'rm -rf "$work"' EXIT
# The development venv's ansible-galaxy builds the tarball, as a release does (docs/releasing.md).
"$root/.venv/bin/ansible-galaxy" collection build --output-path "$work" "$root" >/dev/null
tarball=$(find "$work" -maxdepth 1 -name 'crawl-egress_proxies-*.tar.gz')
cat >"$work/galaxy-importer.cfg" <<'CFG'
[galaxy-importer]
RUN_ANSIBLE_TEST = False
RUN_ANSIBLE_LINT = True
RUN_ANSIBLE_DOC = True
OFFLINE_ANSIBLE_LINT = True
LOG_LEVEL_MAIN = INFO
CFG
say "importing ${tarball##*/} (ansible-lint and the documentation checks; ansible-test off)"
# A clean environment: the importer must see only what Galaxy's sees (no collections path of the
# development venv, no ANSIBLE_* settings of `make`).
status=0
(cd "$work" && env -i PATH="$venv/bin:/usr/local/bin:/usr/bin:/bin" HOME="$work" LANG=C.UTF-8 \
  GALAXY_IMPORTER_CONFIG="$work/galaxy-importer.cfg" \
  "$venv/bin/python" -m galaxy_importer.main "$tarball") >"$work/import.log" 2>&1 || status=$?
# The importer logs each finding as a "WARNING: ..." or "ERROR: ..." line.
findings=$(grep -E '^(WARNING|ERROR|CRITICAL)\b' "$work/import.log" || true)
if [ "$status" -ne 0 ] || [ -n "$findings" ]; then
  tail -n 40 "$work/import.log" >&2
  say "FAILED (exit $status); its warnings and errors:" >&2
  printf '%s\n' "${findings:-none logged}" | sed 's/^/    /' >&2
  exit 1
fi
say "imported with no warning and no error ($(grep -c '^Loading\|^Linting\|^Running' "$work/import.log") steps logged)"
