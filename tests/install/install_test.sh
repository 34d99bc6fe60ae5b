#!/bin/sh
# `cmake --install` of this build tree into a temporary prefix, as a packager
# does it: the daemon, the CLI and the XDP object land where the installed
# daemon looks for them, and both programs answer --version. The installed
# daemon then attaches its XDP program to a veth of a namespace this test
# makes (and removes, also on failure), loading the installed object.
#
# Usage: install_test.sh BUILD_DIR VERSION
set -eu
build=$1
version=$2
tmp=$(mktemp -d /tmp/xdpvhost-install.XXXXXX)
ns=xvinst$$
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  ip netns del "$ns" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/daemon.log" ] && cat "$tmp/daemon.log" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/usr" > "$tmp/install.log" || fail "cmake --install: $(cat "$tmp/install.log")"
daemon=$tmp/usr/sbin/xdpvhostd
ctl=$tmp/usr/bin/xdpvhostctl
[ -x "$daemon" ] || fail "no $daemon"
[ -x "$ctl" ] || fail "no $ctl"
object=$(find "$tmp/usr/lib" -name xdp_steer.bpf.o)
[ -n "$object" ] || fail "no xdp_steer.bpf.o under $tmp/usr/lib"
[ "$("$daemon" --version)" = "xdpvhostd $version" ] || fail "xdpvhostd --version: $("$daemon" --version)"
[ "$("$ctl" --version)" = "xdpvhostctl $version" ] || fail "xdpvhostctl --version: $("$ctl" --version)"

ip netns add "$ns"
ip -n "$ns" link add xvi0 type veth peer name xvi1
ip -n "$ns" link set xvi0 up
ip -n "$ns" link set xvi1 up
cat > "$tmp/config.json" <<JSON
{
  "uplinks": [{"name": "up0", "interface": "xvi0"}],
  "control": {"socket": "$tmp/control.sock"}
}
JSON
ip netns exec "$ns" "$daemon" --config "$tmp/config.json" > "$tmp/daemon.log" 2>&1 &
daemon_pid=$!
i=0
until [ -S "$tmp/control.sock" ]; do
  i=$((i + 1))
  [ $i -le 100 ] || fail "the installed daemon did not open its control socket"
  kill -0 "$daemon_pid" 2>/dev/null || fail "the installed daemon exited"
  sleep 0.1
done
report=$("$ctl" --socket "$tmp/control.sock" --json uplink list)
echo "$report" | grep -q '"xdp_program": "[a-z]' || fail "no XDP program attached: $report"
grep -q "(object $object)" "$tmp/daemon.log" || fail "the daemon did not load the installed object $object"
echo "installed: $daemon, $ctl, $object; the installed daemon loaded the installed object"
