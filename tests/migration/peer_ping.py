"""A ping every 10 ms from the peer namespace (iputils ping -D: every reply
with its receive time), and what it shows about a migration: requests sent,
replies, lost, the longest gap between two replies (the outage as the
network sees it: QEMU's downtime plus the time until the network learned
the guest's new place)."""

from __future__ import annotations

import re
import subprocess

from xvtest.process import die_with_parent

REPLY_RE = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from .*icmp_seq=(\d+)")


class PeerPing:
    def __init__(self, netns: str, target: str, log_path: str, interval: float = 0.01):
        self.log_path = log_path
        self.cmd = ["ip", "netns", "exec", netns, "ping", "-D", "-i", str(interval), "-W", "1",
                    target]
        self.proc: subprocess.Popen | None = None

    def start(self) -> "PeerPing":
        with open(self.log_path, "wb") as f:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=f,
                                         stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        return self

    def stop(self) -> dict:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(2)  # SIGINT: ping prints its summary
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.summary()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def summary(self) -> dict:
        try:
            with open(self.log_path, errors="replace") as f:
                text = f.read()
        except OSError:
            text = ""
        replies = []
        for line in text.splitlines():
            m = REPLY_RE.match(line)
            if m:
                replies.append((float(m.group(1)), int(m.group(2))))
        tx = rx = 0
        m = re.search(r"(\d+) packets transmitted, (\d+) received", text)
        if m:
            tx, rx = int(m.group(1)), int(m.group(2))
        gap_ms, gap_seq = 0.0, None
        for (t0, s0), (t1, _) in zip(replies, replies[1:]):
            if (t1 - t0) * 1000 > gap_ms:
                gap_ms, gap_seq = (t1 - t0) * 1000, s0
        seqs = {s for _, s in replies}
        last = max(seqs) if seqs else 0
        missing = [s for s in range(1, last + 1) if s not in seqs]
        return {"tx": tx, "rx": rx, "lost": tx - rx, "replies": len(replies),
                "max_gap_ms": round(gap_ms, 1), "gap_after_seq": gap_seq,
                "missing_seqs": len(missing)}
