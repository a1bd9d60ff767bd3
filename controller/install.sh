#!/usr/bin/env bash
# The controller image's install steps, in one place: controller/Containerfile runs them to build
# the image, and tests/controller/test_installed_controller.py runs them (in `make test`) into a
# scratch prefix and starts the controller from what they installed, as the Deployment would.
# Neither has install steps of its own, so the two cannot drift.
#
# usage: controller/install.sh STEP SRC
#   debs build|runtime   the Debian packages the build stage needs (headers to compile
#                        libvirt-python) or the final image needs at run time; `--list` as a
#                        third argument prints them instead (hack/bootstrap.sh installs both
#                        lists on test machines)
#   python               a virtualenv at $VENV with every package of SRC/controller/requirements.lock,
#                        hash-checked (--require-hashes), nothing resolved (--no-deps)
#   collections          the collections galaxy.yml depends on (hack/collections.txt), then the
#                        collection built from SRC, into $COLLECTIONS
#   controller           the controller package from SRC/controller, then the venv byte-compiled
#   all                  python, collections and controller
#
# VENV defaults to /opt/venv and COLLECTIONS to /usr/share/ansible/collections (the image's
# paths); PYTHON (default python3) makes the venv. pip honours its usual environment (the test
# points PIP_FIND_LINKS at a download cache and sets PIP_NO_INDEX).
#
# Why the dependency collections are placed first, from the community `ansible` package's wheel:
# galaxy.yml declares kubernetes.core and ansible.posix, so `ansible-galaxy collection install
# --offline` of the artifact alone fails ("Could not satisfy ... kubernetes.core", issue 29), and
# Galaxy is not reachable where the image is built or tested. With the pinned versions already
# in the collections path, the same install succeeds offline and still checks galaxy.yml's
# version ranges against them (which --no-deps would skip).
set -euo pipefail

step=${1:-}
src=${2:-}
venv=${VENV:-/opt/venv}
collections=${COLLECTIONS:-/usr/share/ansible/collections}
python=${PYTHON:-python3}

# openssh-client: libvirt's qemu+ssh transport (kvm, kvm2) spawns ssh. libvirt0: the library
# libvirt-python was built against. ca-certificates: TLS to Compute Engine and API servers.
# squid: the local provider runs Squid processes inside the controller's Pod (demo use).
# tini: PID 1 that reaps orphans (Squid processes and ssh helpers outlive the module run that
# started them; without a reaper they would linger as zombies).
runtime_debs=(ca-certificates openssh-client libvirt0 squid tini)
# libvirt-python builds against libvirt's headers (pkg-config finds them); none of this reaches
# the final image.
build_debs=(gcc libc6-dev pkg-config libvirt-dev)

say() { printf '==> install.sh %s: %s\n' "$step" "$*"; }
need_src() {
  if [ -z "$src" ] || [ ! -f "$src/$1" ]; then
    echo "usage: $0 $step SRC (the repository root, with $1)" >&2
    exit 2
  fi
}
pip_() { "$venv/bin/pip" --disable-pip-version-check "$@"; }

debs() {
  local list
  case "${1:-}" in
    build) list=("${build_debs[@]}") ;;
    runtime) list=("${runtime_debs[@]}") ;;
    *) echo "usage: $0 debs build|runtime [--list]" >&2 && exit 2 ;;
  esac
  if [ "${2:-}" = --list ]; then
    printf '%s\n' "${list[@]}"
    return
  fi
  say "apt-get install ${list[*]}"
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${list[@]}"
  rm -rf /var/lib/apt/lists/*
}

python_packages() {
  need_src controller/requirements.lock
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  say "the lock's packages into $venv"
  # --no-build-isolation: the one sdist (libvirt-python) builds with the venv's own locked
  # setuptools, not a fresh unpinned one. So that one goes in first (hash-checked too): the
  # setuptools a new venv starts with (65/66 from ensurepip or Debian) has no bdist_wheel without
  # the wheel package, and pip prepares every sdist before it installs anything.
  local setuptools
  setuptools=$(mktemp)
  awk '/^setuptools==/ { on = 1 } on { print } on && !/\\$/ { exit }' \
    "$src/controller/requirements.lock" >"$setuptools"
  pip_ install -q --require-hashes --no-deps -r "$setuptools"
  rm -f "$setuptools"
  pip_ install -q --require-hashes --no-deps --no-build-isolation -r "$src/controller/requirements.lock"
  pip_ check
}

collection() {
  need_src galaxy.yml
  local dist
  dist=$(mktemp -d)
  mkdir -p "$collections"
  say "kubernetes.core and ansible.posix (hack/collections.txt) into $collections"
  "$venv/bin/python" "$src/hack/install_collections.py" "$src/hack/collections.txt" "$collections"
  # The artifact a user would install (galaxy.yml's build_ignore applies), installed offline.
  say "crawl.egress_proxies built from $src"
  "$venv/bin/ansible-galaxy" collection build "$src" --output-path "$dist"
  "$venv/bin/ansible-galaxy" collection install --offline -p "$collections" "$dist"/crawl-egress_proxies-*.tar.gz
  rm -rf "$dist"
  test -f "$collections/ansible_collections/crawl/egress_proxies/plugins/modules/proxy_instance.py"
}

controller() {
  need_src controller/pyproject.toml
  say "the controller package from $src/controller"
  # Built with the locked setuptools and without reaching an index: every dependency is
  # installed from the lock already (pip check proves it).
  pip_ install -q --no-deps --no-build-isolation --no-index "$src/controller"
  pip_ check
  "$venv/bin/egress-proxies-controller" --version
  # Byte-compiled now: the root filesystem is read-only at run time.
  "$venv/bin/python" -m compileall -q "$venv"
}

case "$step" in
  debs) debs "${2:-}" "${3:-}" ;;
  python) python_packages ;;
  collections) collection ;;
  controller) controller ;;
  all)
    python_packages
    collection
    controller
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed -n 's/^# \{0,1\}//p' >&2
    exit 2
    ;;
esac
