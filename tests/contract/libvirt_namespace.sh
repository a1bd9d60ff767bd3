#!/bin/sh
# Runs a command (virtlogd, libvirtd, or anything that must see the same libvirt) in a private
# mount namespace whose libvirt state, config and log directories are STATE's, so a test
# hypervisor never meets the machine's own libvirtd (its driver pid files under /run/libvirt,
# its domains under /etc/libvirt/qemu, its default network) and two test hypervisors never meet
# each other. Every process started through this script with the same STATE sees the same
# directories (bind mounts of one tree), so libvirtd finds the virtlogd started beside it.
#
# The one directory shared between test hypervisors is /var/cache/libvirt: libvirtd's cache of
# what each qemu binary can do (keyed by the binary and libvirt's version), which a fresh daemon
# otherwise rebuilds by probing qemu, 4 s to over 30 s on a busy 2-core machine.
#
# usage: libvirt_namespace.sh STATE COMMAND [ARG...]
# STATE must be reachable by the qemu user (libvirt-qemu): a 0755 directory.
set -eu
state=$1
shift
cache=/var/cache/egress-proxies/libvirt
for sub in run lib log etc-qemu etc-storage etc-secrets; do
  mkdir -p "$state/$sub"
done
mkdir -p "$cache"
chmod 0755 "$state" "$state/lib" "$cache"
# Mount points in the root namespace: empty directories where the machine has none yet.
for point in /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt \
  /etc/libvirt/qemu /etc/libvirt/storage /etc/libvirt/secrets; do
  [ -d "$point" ] || mkdir -p "$point"
done
# The inner script expands its own positional parameters, not this shell's.
# shellcheck disable=SC2016
exec unshare --mount --propagation private -- sh -c '
  state=$1
  cache=$2
  shift 2
  mount --bind "$state/run" /run/libvirt
  mount --bind "$state/lib" /var/lib/libvirt
  mount --bind "$cache" /var/cache/libvirt
  mount --bind "$state/log" /var/log/libvirt
  mount --bind "$state/etc-qemu" /etc/libvirt/qemu
  mount --bind "$state/etc-storage" /etc/libvirt/storage
  mount --bind "$state/etc-secrets" /etc/libvirt/secrets
  exec "$@"
' libvirt-namespace "$state" "$cache" "$@"
