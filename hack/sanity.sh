#!/usr/bin/env bash
# Runs `ansible-test sanity` (every default test) on the collection, for Python 3.11 only.
# Called by `make sanity` (part of `make test`); exits non-zero on any failure.
#
# Why the copy: ansible-test only accepts a collection that sits at a physical path
# .../ansible_collections/crawl/egress_proxies (a symlink resolves back to the repository and is
# refused), so the tracked and untracked-but-not-ignored files are copied into a temporary tree
# of that shape, which is removed afterwards. ansible-test needs no git repository there:
# without a .git at the collection root it tests every file under the tree, and the copy holds
# exactly the files to test (never .venv, tests/output or other ignored files).
#
# Why --venv: every sanity test gets its own virtualenv with ansible-test's exact pins (pylint,
# yamllint, voluptuous, ...), cached under ~/.ansible/test/venv and built from the package
# registry with pip the first time (a few minutes), so nothing is added to .venv and the tools
# never conflict with ansible-lint's. Those virtualenvs are created without pip and ansible-test
# bootstraps pip from a get-pip script it downloads from its own CI file host, which is not a
# package registry and is unreachable here; so this script provides that bootstrap itself (see
# provide_pip_bootstrap in sanity_lib.sh): it fetches the exact pip wheel with pip and drops a small stand-in for
# get-pip into ansible-test's documented cache path. An existing genuine script is left alone.
#
# Tests: all default tests run; none is skipped with --skip-test. ansible-test itself reports
# as skipped the ones that have nothing to check in this collection: pslint (no PowerShell
# files) and action-plugin-docs (no action plugins). The changelog test runs because
# changelogs/config.yaml exists: ansible-test installs its own pinned antsibull-changelog into
# that test's --venv virtualenv and lints the config and every fragment under
# changelogs/fragments/ (after a release only .keep is left there, and the test still checks the
# config). What ansible-test does not check, this script does first, with the antsibull-changelog
# of requirements-dev.txt: changelogs/changelog.yaml lints, and CHANGELOG.rst and CHANGELOG.md
# are exactly what it generates (no hand edits; docs/testing.md, "The changelog").
# ansible-test only warns and passes when the shellcheck program is missing, so this script
# installs it (Debian package) or fails: the shell scripts in hack/ and .ci/ must be checked.
#
# Environment: VENV (default .venv), SANITY_ARGS (extra ansible-test arguments, e.g.
# "--test pylint"), SANITY_KEEP=1 keeps the temporary tree for inspection.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$root/.venv}
python_version=3.11
started=$(date +%s)

say() { printf '==> sanity: %s (%ss)\n' "$*" "$(($(date +%s) - started))"; }

[ -x "$venv/bin/ansible-test" ] || {
  echo "sanity: $venv/bin/ansible-test not found; run hack/bootstrap.sh test first" >&2
  exit 2
}
export PATH="$venv/bin:$PATH"
# shellcheck source=sanity_lib.sh
. "$root/hack/sanity_lib.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/egress-proxies-sanity.XXXXXX")
if [ "${SANITY_KEEP:-0}" = 1 ]; then
  trap 'echo "sanity: kept $work" >&2' EXIT
else
  trap 'rm -rf "$work"' EXIT
fi

collection=$(copy_collection "$root" "$work")

if ! command -v shellcheck >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing shellcheck (Debian package) for the shellcheck sanity test"
    apt_install=(apt-get install -y -qq -o DPkg::Lock::Timeout=900 --no-install-recommends shellcheck)
    export DEBIAN_FRONTEND=noninteractive
    "${apt_install[@]}" >/dev/null 2>&1 || {
      apt-get update -qq -o DPkg::Lock::Timeout=900
      "${apt_install[@]}" >/dev/null
    }
  else
    echo "sanity: the shellcheck program is required (apt-get install shellcheck)" >&2
    exit 2
  fi
fi

provide_pip_bootstrap "$venv" "$python_version"

# The changelog's one source of truth is changelogs/changelog.yaml (plus the fragments of the
# next release); the CHANGELOG files are generated from it and must not drift.
[ -x "$venv/bin/antsibull-changelog" ] || {
  echo "sanity: $venv/bin/antsibull-changelog not found; run hack/bootstrap.sh test first" >&2
  exit 2
}
say "antsibull-changelog: changelogs/changelog.yaml lints, CHANGELOG.rst/.md are generated from it"
(
  cd "$collection"
  antsibull-changelog lint-changelog-yaml changelogs/changelog.yaml
  antsibull-changelog generate
  for file in CHANGELOG.rst CHANGELOG.md; do
    cmp -s "$file" "$root/$file" || {
      echo "sanity: $file differs from what changelogs/changelog.yaml generates;" \
        "run antsibull-changelog generate (never edit it by hand)" >&2
      diff -u "$root/$file" "$file" | head -n 40 >&2 || true
      exit 1
    }
  done
)

say "ansible-test sanity --python $python_version --venv"
cd "$collection"
status=0
# shellcheck disable=SC2086  # SANITY_ARGS is a list of words on purpose
ansible-test sanity --venv --requirements --python "$python_version" --color no \
  ${SANITY_ARGS:-} || status=$?
if [ "$status" -eq 0 ]; then
  say "passed"
else
  say "FAILED (exit $status)"
fi
exit "$status"
