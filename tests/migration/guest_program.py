"""What the migrating guest runs (an xv.cmd step of the test image): console
log level 8 (every kernel message, virtio errors included, reaches the
console), an iperf3 server for the peer's TCP stream, its own ping to the
peer every 50 ms written straight to the console (so each reply lands in
the console file of the QEMU the guest runs in at that moment: the source's
before the pause, the destination's after the resume), then it waits for
the peer to send "stop" on TCP 7777, and prints the kernel messages about
virtio, rings or faults, and how many look like errors."""

from __future__ import annotations

import re

STOP_PORT = 7777
GUEST_PING_INTERVAL = 0.05

PROGRAM = r"""
echo 8 > /proc/sys/kernel/printk
iperf3 -s -D
ping -i %(interval)s "$XV_PEER" > /dev/console 2>&1 &
ping_pid=$!
read -r up _ < /proc/uptime
echo "XV-READY mig t=$up"
nc -l -p %(port)d > /tmp/stop.out < /dev/null
kill -INT "$ping_pid"
sleep 1
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

SEQ_RE = re.compile(r"bytes from [\d.]+: seq=(\d+)")


def ping_seqs(lines: list[str]) -> list[int]:
    return [int(m.group(1)) for m in (SEQ_RE.search(l) for l in lines) if m]


def after_resume(src_lines: list[str], dst_lines: list[str]) -> dict:
    """The guest's ping around the move: the last reply the source console
    saw (before the pause), and which requests sent after it got no reply
    by the end (one may be the request in flight at the pause)."""
    before = ping_seqs(src_lines)
    after = ping_seqs(dst_lines)
    last_before = max(before) if before else -1
    last = max(after) if after else last_before
    got = set(after)
    missing = [s for s in range(last_before + 1, last + 1) if s not in got]
    lost_before = [s for s in range(0, last_before + 1) if s not in set(before)]
    return {"replies_before": len(before), "replies_after": len(after),
            "last_seq_before_pause": last_before, "last_seq": last,
            "missing_after": missing[:40], "missing_after_count": len(missing),
            "lost_before_pause": len(lost_before)}
