#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd,
# kwok) from their Go modules at the versions pinned in versions.env, once per machine.
#
# Who calls it: tests/cluster/cluster.py (the pytest fixture) and `make cluster-binaries`.
# Guarantees: the binaries land in $EGRESS_K8S_CACHE/<key>/bin (default
# /var/cache/egress-proxies/k8s), where <key> hashes versions.env (which also carries
# BUILD_RECIPE, bumped when this script changes what it produces) and the Go version, so a
# version change builds a new set and an unchanged one is never rebuilt; kwok's node and Pod
# stages of the same release land in <key>/bin/stages.yaml. A build
# happens under a lock (concurrent callers wait, then reuse it) and is published by one rename,
# so a half-built set is never used. Progress goes to stderr; the last line of stdout is the
# bin directory. Nothing is written into the repository.
#
# Knobs: GO (the go command), EGRESS_K8S_CACHE (cache root), EGRESS_K8S_BUILD_JOBS (go build -p,
# default 2: the machine is small and shared).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
GO=${GO:-/usr/local/go/bin/go}
[ -x "$GO" ] || GO=$(command -v go) || { echo "build.sh: no go toolchain found" >&2; exit 1; }
jobs=${EGRESS_K8S_BUILD_JOBS:-2}
cache_root=${EGRESS_K8S_CACHE:-/var/cache/egress-proxies/k8s}
key=$({ cat "$here/versions.env"; "$GO" env GOVERSION; } | sha256sum | cut -c1-16)
dir=$cache_root/$key
binaries=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)
# `build.sh kubectl`: kubectl of the same release alone (the installed-controller test applies
# the manifests with `kubectl apply -k` as users do), in a directory of its own so the control
# plane's cached set stays valid; most of its packages are the control plane's, already in
# GOCACHE.
what=${1:-control-plane}
case $what in
  control-plane) ;;
  kubectl)
    dir=$cache_root/kubectl-$key
    binaries=(kubectl)
    ;;
  *)
    echo "usage: build.sh [control-plane|kubectl]" >&2
    exit 2
    ;;
esac

complete() {
  local b
  for b in "${binaries[@]}"; do [ -x "$dir/bin/$b" ] || return 1; done
  [ "$what" = kubectl ] || [ -s "$dir/bin/stages.yaml" ]
}

say() { printf '[cluster-build %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if complete; then
  echo "$dir/bin"
  exit 0
fi

mkdir -p "$cache_root"
exec 9>"$dir.lock"
say "waiting for the build lock $dir.lock"
flock 9
if complete; then # another caller built it while we waited
  echo "$dir/bin"
  exit 0
fi

start=$(date +%s)
work=$dir/work
rm -rf "$work"
mkdir -p "$work/bin"
export GOFLAGS="-trimpath -mod=mod -buildvcs=false"
export GOMAXPROCS=${GOMAXPROCS:-$jobs}
export GOTOOLCHAIN=local
export CGO_ENABLED=0
# Keep the compile cache next to the binaries, so `rm -rf` of the cache root frees everything.
export GOCACHE=$cache_root/gocache

say "building $what into $dir (cold build: tens of minutes on 2 cores for the control plane;"
say "  k8s $K8S_VERSION, staging $K8S_STAGING_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION, $("$GO" env GOVERSION), -p $jobs)"

# go build -v names each package as it is compiled: show a count every 100, not thousands of lines.
progress() {
  awk -v what="$1" '
    { n++; if (n % 100 == 0) { printf("[cluster-build] %s: %d packages compiled\n", what, n) > "/dev/stderr"; fflush("/dev/stderr") } }
    /^(#|go: |.*: )/ { print > "/dev/stderr" }
    END { printf("[cluster-build] %s: %d packages compiled in total\n", what, n) > "/dev/stderr" }'
}

# build NAME MODULE-REQUIREMENTS-AND-REPLACES LDFLAGS OUTPUT PACKAGES...
build() {
  local name=$1 modtext=$2 ldflags=$3 out=$4
  shift 4
  local src=$work/src/$name t0
  t0=$(date +%s)
  mkdir -p "$src"
  printf 'module egress-proxies.test/%s\n\ngo 1.26.0\n\n%s\n' "$name" "$modtext" >"$src/go.mod"
  printf 'package main\n' >"$src/doc.go" # go mod tidy wants a package in the main module
  say "$name: resolving modules (go mod tidy)"
  (cd "$src" && "$GO" mod tidy 2>&1) | awk '/^go: downloading/ { n++; next } { print > "/dev/stderr" }
    END { if (n) printf("[cluster-build] downloaded %d modules\n", n) > "/dev/stderr" }'
  [ "${PIPESTATUS[0]}" = 0 ] || { say "$name: go mod tidy failed"; exit 1; }
  say "$name: compiling $*"
  (cd "$src" && "$GO" build -v -p "$jobs" -ldflags "$ldflags" -o "$out" "$@" 2>&1) | progress "$name"
  [ "${PIPESTATUS[0]}" = 0 ] || { say "$name: build failed"; exit 1; }
  say "$name: done in $(($(date +%s) - t0))s"
}

# kube-apiserver, kube-controller-manager, kube-scheduler: one module, so shared packages are
# compiled once. k8s.io/kubernetes requires its staging modules at v0.0.0 with replaces to
# ./staging, which only apply inside its own repository: pin them to the published v0.x.y.
staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
  cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
  cri-client cri-streaming csi-translation-lib dynamic-resource-allocation endpointslice externaljwt
  kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
  mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller streaming)
replaces=""
for m in "${staging[@]}"; do replaces+="	k8s.io/$m => k8s.io/$m $K8S_STAGING_VERSION"$'\n'; done
minor=${K8S_VERSION#v1.}
minor=${minor%%.*}
k8s_ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ld+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  k8s_ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
if [ "$what" = kubectl ]; then
  build kubectl "require k8s.io/kubernetes $K8S_VERSION

replace (
$replaces)

tool k8s.io/kubernetes/cmd/kubectl" "$k8s_ld" "$work/bin/" k8s.io/kubernetes/cmd/kubectl
  rm -rf "${dir:?}/bin"
  mv "$work/bin" "$dir/bin"
  rm -rf "$work"
  say "kubectl built in $(($(date +%s) - start))s: $dir/bin"
  echo "$dir/bin"
  exit 0
fi

build kubernetes "require k8s.io/kubernetes $K8S_VERSION

replace (
$replaces)

tool (
	k8s.io/kubernetes/cmd/kube-apiserver
	k8s.io/kubernetes/cmd/kube-controller-manager
	k8s.io/kubernetes/cmd/kube-scheduler
)" "$k8s_ld" "$work/bin/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler

# etcd: the server module's root package is the etcd binary.
build etcd "require go.etcd.io/etcd/server/v3 $ETCD_VERSION

tool go.etcd.io/etcd/server/v3" "-s -w" "$work/bin/etcd" go.etcd.io/etcd/server/v3

build kwok "require sigs.k8s.io/kwok $KWOK_VERSION

tool sigs.k8s.io/kwok/cmd/kwok" "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" \
  "$work/bin/" sigs.k8s.io/kwok/cmd/kwok

# kwok's stages (from the same release): nodes become Ready and keep a lease, scheduled Pods
# become Running with an IP, deleted Pods go away (what a kubelet would do).
kwok_dir=$(cd "$work/src/kwok" && "$GO" list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
  pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
  printf -- '---\n'
  cat "$kwok_dir/kustomize/stage/$f.yaml"
done >"$work/bin/stages.yaml"

# Publish atomically: bin/ appears complete or not at all.
rm -rf "${dir:?}/bin"
mv "$work/bin" "$dir/bin"
printf 'K8S_VERSION=%s\nETCD_VERSION=%s\nKWOK_VERSION=%s\nBUILD_SECONDS=%s\n' "$K8S_VERSION" \
  "$ETCD_VERSION" "$KWOK_VERSION" "$(($(date +%s) - start))" >"$dir/build-info"
rm -rf "$work"
say "control plane built in $(($(date +%s) - start))s: $dir/bin"
echo "$dir/bin"
