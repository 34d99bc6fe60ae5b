"""The native helpers in the peer ("outside") namespace: the XDP counter
on the peer veth, the paced UDP source and the ICMP request/response
client. Sources run on the backend's core at nice -20 (the issue's
placement: the sender's kernel context does the veth, XDP redirect and
UMEM copy work, and the guest keeps the other core to itself)."""

import json
import os
import signal
import subprocess

from . import launch
from .topology import PEER_NS, PEER_IF, PEER_IP, GUEST_IP, GUEST_MAC


class ToolError(RuntimeError):
    pass


def tool_path(tools_dir, name):
    path = os.path.join(tools_dir, name)
    if not os.access(path, os.X_OK):
        raise ToolError(f"{path} missing: build it with `ninja -C BUILD xvb_tools`")
    return path


class XdpCounter:
    """xvb-xdpcount on the peer veth: counts every frame reaching the
    outside, then drops it (rate tests) or passes it to the stack (ICMP)."""

    def __init__(self, tools_dir, log_path):
        self.cmd = launch.command([tool_path(tools_dir, "xvb-xdpcount"), "--ifname", PEER_IF,
                                   "--object", os.path.join(tools_dir, "xdp_count.bpf.o")],
                                  netns=PEER_NS)
        self.log_path = log_path
        self.proc = None
        self.mode = None

    def start(self):
        self.err = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.err, text=True, bufsize=1, start_new_session=True)
        launch.REGISTRY.add(self)
        ready = self._line()
        self.mode = ready.get("mode")
        return self

    def _line(self):
        line = self.proc.stdout.readline()
        if not line:
            raise ToolError(f"xvb-xdpcount exited ({self.proc.poll()}); see {self.log_path}")
        return json.loads(line)

    def _cmd(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        return self._line()

    def read(self):
        """{'t_ns', 'packets', 'bytes'} summed over CPUs."""
        return self._cmd("read")

    def set_action(self, action):
        assert action in ("drop", "pass")
        if not self._cmd(action).get("ok"):
            raise ToolError(f"xvb-xdpcount: cannot set {action}")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(3)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc:
            self.err.close()
        launch.REGISTRY.discard(self)


def _run_json(cmd, timeout, preexec, what):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=preexec)
    line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    try:
        return json.loads(line), r
    except ValueError:
        raise ToolError(f"{what} failed ({r.returncode}): {r.stderr.strip()[-500:]}") from None


def paced_send(tools_dir, rate, seconds, size, cpu, dst_mac=GUEST_MAC, burst=0, cgroup=None):
    cmd = [tool_path(tools_dir, "xvb-paced-send"), "--ifname", PEER_IF, "--dst-mac", dst_mac,
           "--src-ip", PEER_IP, "--dst-ip", GUEST_IP, "--size", str(size), "--rate", str(int(rate)),
           "--duration", str(seconds)]
    if burst:
        cmd += ["--burst", str(burst)]
    cmd = launch.command(cmd, netns=PEER_NS, cpu=cpu, nice=-20)
    res, _ = _run_json(cmd, seconds * 3 + 30, cgroup.preexec() if cgroup else None, "xvb-paced-send")
    return res


def icmp_rr(tools_dir, seconds, cpu, interval_us=0, warmup=100, timeout_ms=100, cgroup=None, sched="fifo"):
    """sched 'fifo': the client runs SCHED_FIFO 10 (it blocks in recv() for
    every reply and never spins, so it cannot starve the core); a reply then
    wakes it at once even when a busy-polling backend holds the core. With
    'nice' (nice -20 only) the wake-up waits for the scheduler to preempt
    the poller, which put milliseconds into DPDK's p99 here."""
    cmd = launch.command([tool_path(tools_dir, "xvb-icmp-rr"), "--dst", GUEST_IP, "--duration",
                          str(seconds), "--interval-us", str(interval_us), "--warmup", str(warmup),
                          "--timeout-ms", str(timeout_ms)], netns=PEER_NS, cpu=cpu, nice=-20)
    if sched == "fifo":
        cmd = ["chrt", "--fifo", "10"] + cmd
    res, r = _run_json(cmd, seconds * 2 + warmup * timeout_ms / 1000 + 30,
                       cgroup.preexec() if cgroup else None, "xvb-icmp-rr")
    res["exit_code"] = r.returncode
    return res
