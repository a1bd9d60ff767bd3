# shellcheck shell=bash
# What hack/sanity.sh (the development virtualenv's full sanity run) and tests/matrix/cell.sh
# (each matrix cell's ansible-test) share: the collection copied to an ansible_collections path,
# and the offline pip bootstrap of ansible-test's managed virtualenvs. Sourced, not run; both
# functions report on stderr. See hack/sanity.sh's header for why each exists.

# copy_collection ROOT WORK: copies ROOT's tracked and untracked-but-not-ignored files to
# WORK/ansible_collections/crawl/egress_proxies (ansible-test refuses a symlinked collection)
# and prints that path.
copy_collection() {
  local root=$1 work=$2 collection
  collection="$work/ansible_collections/crawl/egress_proxies"
  mkdir -p "$collection"
  printf '==> sanity: copying the collection to %s\n' "$collection" >&2
  (cd "$root" && git ls-files -z -co --exclude-standard) |
    rsync -a --from0 --ignore-missing-args --files-from=- "$root/" "$collection/"
  echo "$collection"
}

# provide_pip_bootstrap VENV PYTHON_VERSION: ansible-test (of VENV) bootstraps pip in each
# virtualenv it creates from a get-pip script it downloads from its own CI file host, which is
# unreachable here; this fetches the exact pip wheel it wants for PYTHON_VERSION with pip and
# drops a small stand-in for get-pip into ansible-test's documented cache path (the same path in
# every ansible-core from 2.16 on). An existing script is left alone.
provide_pip_bootstrap() {
  local venv=$1 python_version=$2 pip_version cache script wheel tmp
  pip_version=$(PYTHON_VERSION=$python_version "$venv/bin/python" - <<'EOF'
import os

from ansible_test._internal.python_requirements import get_venv_packages


class Python:
    version = os.environ["PYTHON_VERSION"]


print(get_venv_packages(Python())["pip"])
EOF
)
  cache="$HOME/.ansible/test/cache"
  script="$cache/get_pip_${pip_version//./_}.py"
  if [ -s "$script" ]; then
    return
  fi
  mkdir -p "$cache"
  wheel=$(find "$cache" -maxdepth 1 -name "pip-${pip_version}-py3-none-any.whl" | head -n 1)
  if [ -z "$wheel" ]; then
    printf '==> sanity: fetching pip %s for ansible-test'"'"'s virtualenvs\n' "$pip_version" >&2
    "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --dest "$cache" "pip==$pip_version" >&2
    wheel="$cache/pip-${pip_version}-py3-none-any.whl"
  fi
  tmp=$(mktemp "$script.XXXXXX")
  cat >"$tmp" <<EOF
# Stand-in for get-pip.py ${pip_version}, written by egress-proxies' hack/sanity_lib.sh: runs pip
# from its wheel to install the requested packages into an empty virtualenv, as get-pip.py does.
import sys

sys.path.insert(0, "${wheel}")
from pip._internal.cli.main import main  # noqa: E402

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
sys.exit(main(["install", "--upgrade", "--force-reinstall", *args]))
EOF
  mv "$tmp" "$script"
}
