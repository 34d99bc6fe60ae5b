#!/bin/sh
# The demo: installs what is needed, builds, and runs xdpvhostd on a
# self-contained topology, then shows guests talking through it:
#
#   netns xvdemo-peer                    netns xvdemo-node
#   +-------------------+   veth pair   +---------------------------------+
#   | xvdemo1 10.77.0.1 |<------------->| xvdemo0 10.77.0.3 (uplink up0)  |
#   +-------------------+               |   XDP -> AF_XDP -> xdpvhostd    |
#                                       |        vm1 (10.77.0.2)  vm2     |
#                                       +------------|------------|-------+
#                                   vhost-user sockets in /tmp/xdpvhost-demo
#                         DPDK testpmd virtio_user guests (icmpecho, then macswap)
#
# Nothing is sent off this machine; everything is removed at the end.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# XDPVHOST_DEMO_BUILT=1: the tree is already built, in XDPVHOST_BUILD_DIR
# (default build/): how the demo's own test (dpdk.demo) runs it in CI.
if [ "${XDPVHOST_DEMO_BUILT:-0}" != 1 ]; then
  ./scripts/bootstrap.sh
  ./scripts/build.sh release xdpvhostd xdpvhostctl xdpvhost_bpf
fi

DIR=/tmp/xdpvhost-demo
NODE=xvdemo-node
PEER=xvdemo-peer
BUILD=${XDPVHOST_BUILD_DIR:-$ROOT/build}
DAEMON=$BUILD/daemon/xdpvhostd
CTL="$BUILD/ctl/xdpvhostctl --socket $DIR/control.sock"

cleanup() {
  set +e
  for p in $(cat "$DIR"/*.pid 2>/dev/null); do kill -INT "$p" 2>/dev/null; done
  sleep 1
  for p in $(cat "$DIR"/*.pid 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
  ip netns del $NODE 2>/dev/null
  ip netns del $PEER 2>/dev/null
}
trap cleanup EXIT INT TERM
cleanup
rm -rf "$DIR"
mkdir -p "$DIR"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "topology: $NODE <-> $PEER over a veth pair"
ip netns add $NODE
ip netns add $PEER
ip link add xvdemo0 netns $NODE type veth peer name xvdemo1 netns $PEER
ip -n $NODE link set lo up
ip -n $PEER link set lo up
ip -n $NODE addr add 10.77.0.3/24 dev xvdemo0
ip -n $PEER addr add 10.77.0.1/24 dev xvdemo1
ip -n $NODE link set xvdemo0 up
ip -n $PEER link set xvdemo1 up
# veth with TX checksum offload hands out unfinished checksums; a real NIC
# does not (see lib/xsk/README.md).
ip netns exec $PEER ethtool -K xvdemo1 tx off >/dev/null

step "xdpvhostd in $NODE: uplink up0 on xvdemo0, ports vm1 and vm2"
cat > "$DIR/config.json" <<JSON
{
  "uplinks": [{"name": "up0", "interface": "xvdemo0", "queues": [0]}],
  "ports": [
    {"name": "vm1", "socket": "$DIR/vm1.sock", "mac": "52:54:00:77:00:01", "uplink": "up0"},
    {"name": "vm2", "socket": "$DIR/vm2.sock", "mac": "52:54:00:77:00:02", "uplink": "up0"}
  ],
  "tunables": {"busy_poll_us": 50, "signal_batch": 32},
  "control": {"socket": "$DIR/control.sock"},
  "metrics": {"listen": "127.0.0.1:9477"}
}
JSON
ip netns exec $NODE "$DAEMON" --config "$DIR/config.json" > "$DIR/xdpvhostd.log" 2>&1 &
echo $! > "$DIR/daemon.pid"
for _ in $(seq 50); do [ -S "$DIR/control.sock" ] && break; sleep 0.1; done
$CTL status

testpmd() { # name socket mac mode lcores main-lcore [testpmd options...]
  name=$1 sock=$2 mac=$3 mode=$4 lcores=$5 main=$6
  shift 6
  dpdk-testpmd --no-pci --no-huge -m 512 --file-prefix="xvdemo-$name" -l "$lcores" --main-lcore="$main" \
    --log-level=lib.eal:error --vdev="net_virtio_user0,path=$sock,queue_size=1024,mac=$mac" -- \
    --forward-mode="$mode" --stats-period=1 --nb-cores=1 --total-num-mbufs=8192 "$@" \
    > "$DIR/testpmd-$name.log" 2>&1 &
  echo $! > "$DIR/testpmd-$name.pid"
}

wait_running() { # port: until its guest has started its queues
  for _ in $(seq 100); do
    state=$($CTL --json call port.get "{\"name\":\"$1\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
    [ "$state" = running ] && return 0
    sleep 0.1
  done
  echo "demo: port $1 is $state, not running, after 10 s (see $DIR/testpmd-$1.log)" >&2
  return 1
}

wait_exit() { # name: until its testpmd has quit
  for _ in $(seq 50); do kill -0 "$(cat "$DIR/testpmd-$1.pid")" 2>/dev/null || return 0; sleep 0.1; done
}

step "guest vm1: DPDK testpmd (virtio_user) answering ARP and ping as 10.77.0.2"
testpmd vm1 "$DIR/vm1.sock" 52:54:00:77:00:01 icmpecho 0,1 0
wait_running vm1
step "from $PEER: ping the guest through the uplink (XDP redirect -> AF_XDP -> vhost-user)"
ip netns exec $PEER ping -c 5 -i 0.2 10.77.0.2
step "from $PEER: ping the node's own address (the host keeps its traffic: XDP_PASS)"
ip netns exec $PEER ping -c 2 -i 0.2 10.77.0.3

step "guests vm1 and vm2 exchange frames through the local switch for 3 s"
echo "both run testpmd macswap (every frame back to its sender); vm2 starts the"
echo "exchange with one burst of 64-byte frames to vm1 (--tx-first)"
kill -INT "$(cat "$DIR/testpmd-vm1.pid")"
wait_exit vm1
testpmd vm1 "$DIR/vm1.sock" 52:54:00:77:00:01 macswap 0,1 0
wait_running vm1
$CTL stats reset >/dev/null
testpmd vm2 "$DIR/vm2.sock" 52:54:00:77:00:02 macswap 0,1 1 --eth-peer=0,52:54:00:77:00:01 --tx-first
sleep 3  # the exchange runs for three seconds
kill -INT "$(cat "$DIR/testpmd-vm2.pid")"
wait_exit vm2
$CTL stats
# Frames into vm1 (from vm2) and into vm2 (back from vm1): both ways.
both=$($CTL --json stats | python3 -c '
import json, sys
ports = json.load(sys.stdin)["ports"]
to_vm1, to_vm2 = ports["vm1"]["tx_packets"], ports["vm2"]["tx_packets"]
print(f"vm2 -> vm1: {to_vm1} frames, vm1 -> vm2: {to_vm2} frames")
print("ok" if to_vm1 > 0 and to_vm2 > 0 else "no")')
echo "$both" | head -1
[ "$(echo "$both" | tail -1)" = ok ] || { echo "demo: the guests did not exchange frames both ways" >&2; exit 1; }

step "Prometheus metrics (GET /metrics on 127.0.0.1:9477 inside $NODE), a few lines"
ip netns exec $NODE python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9477/metrics").read().decode())' \
  | grep -E '^xdpvhost_port_packets_total|^xdpvhost_port_drops_total\{.*no_rx_buffer|^xdpvhost_thread_' | head -12 || true

step "done: stopping (SIGTERM flushes, detaches XDP, removes sockets)"
