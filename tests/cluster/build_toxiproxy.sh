#!/usr/bin/env bash
# Builds toxiproxy-server from its Go module at the version pinned in toxiproxy.env, once per
# machine, for the fault matrix (tests/faults).
#
# Who calls it: tests/faults/toxiproxy_server.py (the pytest fixture) and `make faults`.
# Guarantees (as build.sh for the control plane): the binary lands in
# $EGRESS_TOXIPROXY_CACHE/<key>/bin/toxiproxy-server (default /var/cache/egress-proxies/toxiproxy),
# <key> hashing toxiproxy.env and the Go version; built under a lock (concurrent callers wait,
# then reuse it), published by one rename; progress on stderr, the bin directory as the last
# line of stdout. Nothing is written into the repository.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=toxiproxy.env
. "$here/toxiproxy.env"
GO=${GO:-/usr/local/go/bin/go}
[ -x "$GO" ] || GO=$(command -v go) || { echo "build_toxiproxy.sh: no go toolchain found" >&2; exit 1; }
cache_root=${EGRESS_TOXIPROXY_CACHE:-/var/cache/egress-proxies/toxiproxy}
key=$({ cat "$here/toxiproxy.env"; "$GO" env GOVERSION; } | sha256sum | cut -c1-16)
dir=$cache_root/$key
bin=$dir/bin/toxiproxy-server

say() { printf '[toxiproxy-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if [ -x "$bin" ]; then
  echo "$dir/bin"
  exit 0
fi
mkdir -p "$cache_root"
exec 9>"$dir.lock"
say "waiting for the build lock $dir.lock"
flock 9
if [ -x "$bin" ]; then # another caller built it while we waited
  echo "$dir/bin"
  exit 0
fi

start=$(date +%s)
work=$dir/work
rm -rf "$work"
mkdir -p "$work/bin" "$work/src"
export GOFLAGS="-trimpath -mod=mod -buildvcs=false" GOTOOLCHAIN=local CGO_ENABLED=0
export GOMAXPROCS=${GOMAXPROCS:-2} GOCACHE=$cache_root/gocache
say "building toxiproxy-server $TOXIPROXY_VERSION with $("$GO" env GOVERSION) into $dir (cold: about a minute)"
src=$work/src
printf 'module egress-proxies.test/toxiproxy\n\ngo 1.26.0\n\nrequire github.com/Shopify/toxiproxy/v2 %s\n\ntool github.com/Shopify/toxiproxy/v2/cmd/server\n' \
  "$TOXIPROXY_VERSION" >"$src/go.mod"
printf 'package main\n' >"$src/doc.go"
say "resolving modules (go mod tidy)"
(cd "$src" && "$GO" mod tidy 2>&1) | awk '/^go: downloading/ { n++; next } { print > "/dev/stderr" }
  END { if (n) printf("[toxiproxy-build] downloaded %d modules\n", n) > "/dev/stderr" }'
[ "${PIPESTATUS[0]}" = 0 ] || { say "go mod tidy failed"; exit 1; }
say "compiling github.com/Shopify/toxiproxy/v2/cmd/server"
(cd "$src" && "$GO" build -p 2 -ldflags "-s -w -X github.com/Shopify/toxiproxy/v2.Version=$TOXIPROXY_VERSION" \
  -o "$work/bin/toxiproxy-server" github.com/Shopify/toxiproxy/v2/cmd/server 2>&1) | sed 's/^/[toxiproxy-build] /' >&2
[ "${PIPESTATUS[0]}" = 0 ] || { say "build failed"; exit 1; }
rm -rf "${dir:?}/bin"
mv "$work/bin" "$dir/bin"
printf 'TOXIPROXY_VERSION=%s\nBUILD_SECONDS=%s\n' "$TOXIPROXY_VERSION" "$(($(date +%s) - start))" >"$dir/build-info"
rm -rf "$work"
say "toxiproxy-server built in $(($(date +%s) - start))s: $dir/bin"
echo "$dir/bin"
