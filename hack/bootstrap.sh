#!/usr/bin/env bash
# Installs, idempotently, everything `make demo` or `make test` needs on a fresh Debian host:
# the Debian packages, the virtualenv with the Python requirements, and the collection linked
# where ansible finds it. Usage: hack/bootstrap.sh demo|test
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
profile=${1:-demo}
venv="$root/.venv"
python=${PYTHON:-python3}

say() { printf '==> %s\n' "$*"; }

apt_packages=(squid curl rsync git python3-venv)
# libvirt-python (requirements.txt) builds from source against libvirt's headers.
apt_packages+=(gcc pkg-config libvirt-dev)
# The kvm/kvm2 tests run a real libvirtd + virtlogd + qemu, reached over a real sshd (with nc
# on the "hypervisor" side to reach a non-default libvirt socket).
[ "$profile" = test ] && apt_packages+=(
  libvirt-daemon-system qemu-system-x86 qemu-utils openssh-server openssh-client netcat-openbsd
  python3-apt
  # The real-guest image is built from Debian's packages (tests/guest/build_image.py): cpio
  # packs its initramfs, xorriso its ISO.
  cpio xorriso
  # cloud-init's own code judges the user-data the gcp and kvm providers generate
  # (tests/cloud_init_run.py, under /usr/bin/python3). Installing it starts nothing: its
  # systemd units are only wanted by cloud-init.target at boot, where ds-identify leaves it
  # disabled on a host without a datasource.
  cloud-init
  # libvirt's own validator judges the generated domain and volume XML
  # (tests/unit/test_libvirt_xml_validate.py): virt-xml-validate and the xmllint it runs.
  libvirt-clients libxml2-utils
  # promtool judges the controller's /metrics and its PrometheusRule (tests/controller/promtool.py).
  prometheus
)
# The controller image's build and runtime packages (controller/install.sh, which the Containerfile
# runs too): tests/controller/test_installed_controller.py installs and runs the controller as the
# image does, tini as PID 1 included.
if [ "$profile" = test ]; then
  for kind in build runtime; do
    while read -r pkg; do apt_packages+=("$pkg"); done < <("$root/controller/install.sh" debs "$kind" --list)
  done
fi
missing=()
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq -o DPkg::Lock::Timeout=900
  apt-get install -y -qq -o DPkg::Lock::Timeout=900 --no-install-recommends "${missing[@]}" >/dev/null
fi
# Debian starts the prometheus server on install (port 9090, scraping itself): the tests only
# want promtool, so where systemd runs the service is stopped and kept from starting at boot.
# (In a container without systemd, invoke-rc.d's policy never starts it.)
if [ "$profile" = test ] && [ -d /run/systemd/system ] && { systemctl is-enabled -q prometheus || systemctl is-active -q prometheus; } 2>/dev/null; then
  say "stopping and disabling the prometheus service (only promtool is used)"
  systemctl disable --now -q prometheus
fi

reqs=("$root/requirements.txt")
# Both profiles need ansible-core (requirements-dev.txt) and the controller's requirements: the
# README's controller commands work after `make demo` as after `make test`.
reqs+=("$root/requirements-dev.txt" "$root/controller/requirements.txt")
stamp="$venv/.installed-$(cat "${reqs[@]}" | sha256sum | cut -c1-16)"
if [ ! -x "$venv/bin/python" ]; then
  say "creating the virtualenv in .venv"
  "$python" -m venv "$venv"
fi
if [ ! -e "$stamp" ]; then
  say "installing Python requirements (${reqs[*]##*/})"
  "$venv/bin/pip" install -q --disable-pip-version-check --upgrade pip
  args=()
  for r in "${reqs[@]}"; do args+=(-r "$r"); done
  "$venv/bin/pip" install -q --disable-pip-version-check "${args[@]}"
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi

# The controller package (controller/pyproject.toml), editable: `egress-proxies-controller` and
# `python -m egress_proxies_controller` run this tree's code from anywhere. Its dependencies
# came with controller/requirements.txt; reinstalled when the package's version changes.
want=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/controller/pyproject.toml")
have=$("$venv/bin/python" -c \
  'import importlib.metadata as m; print(m.version("egress-proxies-controller"))' 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  say "installing the controller package $want (editable, controller/pyproject.toml)"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps -e "$root/controller"
fi

link="$venv/collections/ansible_collections/crawl/egress_proxies"
if [ "$(readlink "$link" 2>/dev/null)" != "$root" ]; then
  say "linking the collection into .venv/collections (ANSIBLE_COLLECTIONS_PATH)"
  mkdir -p "$(dirname "$link")"
  ln -sfn "$root" "$link"
fi

# The collections the roles use (kubernetes.core, ansible.posix), pinned in hack/collections.txt
# and copied out of the community `ansible` package's wheel (hack/install_collections.py): only
# those, into the same collections path, and only when a pinned version is missing.
"$venv/bin/python" "$root/hack/install_collections.py" "$root/hack/collections.txt" "$venv/collections"
