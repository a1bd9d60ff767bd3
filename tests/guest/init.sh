#!/bin/sh
# PID 1 of the test guest (tests/guest/build_image.py packs it as /init of the initramfs, with
# /bin/sh a link to busybox-static).
#
# A minimal NoCloud consumer: it mounts the seed CD-ROM the libvirt provider attached (volume
# label cidata), reads meta-data's local-hostname and these keys of user-data, a #cloud-config
# document (cloud-init itself ignores keys it does not know):
#
#   egress_guest_address: 198.18.213.2/24 | dhcp   (default dhcp)
#   egress_guest_gateway: 198.18.213.1             (static address only; optional)
#   egress_guest_proxy_port: 3128                  (default 3128)
#   egress_guest_agent: true | false               (default true: start the QEMU guest agent)
#   egress_guest_agent_seconds: 30                 (stop the agent after that long; default never)
#
# then brings up eth0, starts the guest agent on its virtio-serial port and tinyproxy on the
# port, and prints "egress-guest: ready" on the serial console. Nothing in user-data is echoed.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu
mkdir -p /proc /sys /dev /run /tmp /seed /var/log /var/run
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
exec >/dev/console 2>&1

say() { echo "egress-guest: $*"; }

say "loading modules"
while read -r module; do
  insmod "/lib/modules/$module" || say "insmod $module failed"
done </etc/modules.order

# label DEV: the ISO 9660 volume identifier (32 bytes at 32808: sector 16, offset 40).
label() {
  dd if="$1" bs=1 skip=32808 count=32 2>/dev/null | tr -d ' \000'
}

# The seed is the CD-ROM whose volume label is cidata (NoCloud also accepts CIDATA).
seed=""
for _ in $(seq 1 100); do
  for dev in /dev/sr*; do
    [ -b "$dev" ] || continue
    case "$(label "$dev")" in cidata | CIDATA) ;; *) continue ;; esac
    mount -t iso9660 -o ro "$dev" /seed 2>/dev/null && seed=$dev && break 2
  done
  sleep 0.1
done

# value KEY FILE: the value of a top-level "KEY: value" line, quotes stripped.
value() {
  [ -f "$2" ] || return 0
  sed -n "s/^$1:[[:space:]]*//p" "$2" | head -n 1 | tr -d "\"'\r"
}

if [ -n "$seed" ]; then
  say "seed found on $seed"
  host=$(value local-hostname /seed/meta-data)
  [ -n "$host" ] && hostname "$host"
  address=$(value egress_guest_address /seed/user-data)
  gateway=$(value egress_guest_gateway /seed/user-data)
  port=$(value egress_guest_proxy_port /seed/user-data)
  agent=$(value egress_guest_agent /seed/user-data)
  agent_seconds=$(value egress_guest_agent_seconds /seed/user-data)
else
  say "no seed (cidata) found"
fi
address=${address:-dhcp}
port=${port:-3128}
agent=${agent:-true}

ip link set lo up
for _ in $(seq 1 100); do
  [ -e /sys/class/net/eth0 ] && break
  sleep 0.1
done
ip link set eth0 up
if [ "$address" = dhcp ]; then
  say "eth0: dhcp"
  udhcpc -i eth0 -b -q -t 20 -s /etc/udhcpc.script
else
  say "eth0: $address"
  ip addr add "$address" dev eth0
  [ -n "$gateway" ] && ip route add default via "$gateway"
fi

if [ "$agent" = true ]; then
  for name in /sys/class/virtio-ports/*/name; do
    if [ "$(cat "$name" 2>/dev/null)" = org.qemu.guest_agent.0 ]; then
      port_dev=/dev/$(basename "$(dirname "$name")")
      say "guest agent on $port_dev"
      qemu-ga -m virtio-serial -p "$port_dev" -t /run -l /var/log/qemu-ga.log &
      agent_pid=$!
      if [ -n "$agent_seconds" ]; then
        (sleep "$agent_seconds" && kill "$agent_pid" && say "guest agent stopped") &
      fi
    fi
  done
else
  say "guest agent disabled by user-data"
fi

cat >/etc/tinyproxy.conf <<EOF
User nobody
Group nogroup
Port $port
Listen 0.0.0.0
Timeout 60
MaxClients 50
LogLevel Warning
DisableViaHeader Yes
EOF
tinyproxy -d -c /etc/tinyproxy.conf &
say "proxy on port $port"
say "ready"

while :; do
  wait
  sleep 1
done
