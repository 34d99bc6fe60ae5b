"""What the migrating guest runs (an xv.cmd step of the test image): console
log level 8 (every kernel message, virtio errors included, reaches the
console), an iperf3 server for the peer's TCP stream, its own ping to the
peer every 50 ms (to a file: a ping blocked on the slow serial console
would have its raw socket overflow with the peer's 10 ms echo requests,
which every raw ICMP socket receives), and every 200 ms the sequence number
of its latest reply on the console (so the source's console tells the last
reply before the pause, the destination's what came after), then it waits for
the peer to send "stop" on TCP 7777, and prints the kernel messages about
virtio, rings or faults, and how many look like errors."""

from __future__ import annotations

import re

STOP_PORT = 7777
GUEST_PING_INTERVAL = 0.05

PROGRAM = r"""
echo 8 > /proc/sys/kernel/printk
iperf3 -s -D
ping -i %(interval)s "$XV_PEER" > /tmp/gping.out 2>&1 &
ping_pid=$!
( while :; do
    s=$(tail -n 1 /tmp/gping.out | sed -n 's/.*seq=\([0-9]*\).*/\1/p')
    echo "XV-PSEQ ${s:--1}"
    sleep 0.2
  done ) &
mark_pid=$!
read -r up _ < /proc/uptime
echo "XV-READY mig t=$up"
nc -l -p %(port)d > /tmp/stop.out < /dev/null
kill "$mark_pid"
kill -INT "$ping_pid"
sleep 1
echo "XV-PSEQS $(sed -n 's/.*seq=\([0-9]*\).*/\1/p' /tmp/gping.out | tr '\n' ' ')"
dmesg > /tmp/dmesg.out
grep -iE 'virtio|vring|virtqueue' /tmp/dmesg.out > /tmp/kvirtio.out
grep -iE '(virtio|vring|virtqueue).*(error|fail|bad|invalid|unexpected|out of range|not a head|broken|too (long|many))' /tmp/dmesg.out > /tmp/kbad.out
grep -E 'BUG:|WARNING:|Oops|Call Trace' /tmp/dmesg.out >> /tmp/kbad.out
while read -r line; do echo "XV-KLOG $line"; done < /tmp/kbad.out
grep -E "$XV_IF" /proc/net/dev | sed 's/^/XV-NETDEV /'
ethtool -S "$XV_IF" 2>/dev/null | grep -vE ': 0$' | sed 's/^/XV-NETSTAT /' | head -40
grep -E "^(Ip|Icmp|Tcp):" /proc/net/snmp | sed "s/^/XV-SNMP /"
printf 'XV-RESULT {"kind":"klog","virtio_lines":%%d,"suspect":%%d}\n' "$(wc -l < /tmp/kvirtio.out)" "$(wc -l < /tmp/kbad.out)"
""" % {"interval": GUEST_PING_INTERVAL, "port": STOP_PORT}

def _marks(lines: list[str]) -> list[int]:
    out = []
    for line in lines:
        m = re.match(r"^XV-PSEQ (-?\d+)", line)
        if m:
            out.append(int(m.group(1)))
    return out


def after_resume(src_lines: list[str], dst_lines: list[str]) -> dict:
    """The guest's ping around the move: the last reply the source's console
    reported before the pause, and which requests after it never got a reply
    (one may be the request in flight at the pause)."""
    marks = _marks(src_lines)
    last_before = max(marks) if marks else -1
    seqs: list[int] = []
    for line in dst_lines:
        if line.startswith("XV-PSEQS"):
            seqs = [int(x) for x in line.split()[1:] if x.isdigit()]
    got = set(seqs)
    last = max(seqs) if seqs else last_before
    missing = [s for s in range(last_before + 1, last + 1) if s not in got]
    lost_before = [s for s in range(0, last_before + 1) if s not in got]
    return {"replies": len(seqs), "replies_after": sum(1 for s in seqs if s > last_before),
            "last_seq_before_pause": last_before, "last_seq": last,
            "missing_after": missing[:40], "missing_after_count": len(missing),
            "lost_before_pause": len(lost_before)}
