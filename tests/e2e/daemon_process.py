"""xdpvhostd as a child process of the suite: config file, start, SIGTERM /
SIGKILL, restart on the same config, log, and the figures a leak check needs
(open fds, VmRSS, VmSize, guest-memory mappings).

The daemon gets SIGKILL when the suite dies (PR_SET_PDEATHSIG) and runs in its
own process group. With netns= it runs inside that network namespace
(`ip netns exec NS sh -c 'mount bpffs; exec xdpvhostd ...'`: `ip netns exec`
remounts /sys, so bpffs is mounted again in its private mount namespace).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time

from control_client import ControlClient
from xvtest.netns import with_bpffs
from xvtest.process import die_with_parent


def _child_setup():
    os.setpgrp()
    die_with_parent()


class DaemonExited(Exception):
    pass


class Xdpvhostd:
    def __init__(self, binary: str, workdir: str, config: dict, *, name: str = "xdpvhostd",
                 netns: str | None = None, log_level: str | None = None):
        self.binary = os.path.abspath(binary)
        self.workdir = workdir
        self.name = name
        self.netns = netns
        self.log_level = log_level
        self.config = config
        self.config.setdefault("control", {}).setdefault(
            "socket", os.path.join(workdir, f"{name}.control.sock"))
        self.config.setdefault("metrics", {"listen": ""})
        self.config_path = os.path.join(workdir, f"{name}.config.json")
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.control = ControlClient(self.config["control"]["socket"])
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.expect_exit = False     # set while the suite itself stops it
        self._log_f = None
        self._log_start = 0          # offset of the current run in the log

    # ----- life cycle -------------------------------------------------------
    def write_config(self):
        with open(self.config_path, "w") as f:
            json.dump(self.config, f, indent=2)

    def command(self) -> list[str]:
        cmd = [self.binary, "--config", self.config_path]
        if self.log_level:
            cmd += ["--log-level", self.log_level]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + with_bpffs(cmd)
        return cmd

    def start(self, ready_timeout: float = 15.0) -> "Xdpvhostd":
        """Starts the daemon and waits until it is ready (control socket answers,
        or it logged that it is running). Raises DaemonExited if it exits."""
        if self.alive():
            raise RuntimeError("daemon already running")
        self.write_config()
        if self._log_f is None:
            self._log_f = open(self.log_path, "ab")
        self.starts += 1
        self.expect_exit = False
        self._log_f.write(f"===== e2e: start #{self.starts}: {' '.join(self.command())}\n".encode())
        self._log_f.flush()
        self._log_start = os.path.getsize(self.log_path)
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=self._log_f,
                                     stderr=subprocess.STDOUT, preexec_fn=_child_setup)
        self.wait_ready(ready_timeout)
        return self

    def wait_ready(self, timeout: float):
        """Ready: the control socket answers; or, while it does not (yet), the
        log said "xdpvhostd running" at least 2 s ago."""
        deadline = time.monotonic() + timeout
        running_since = None
        while True:
            if not self.alive():
                raise DaemonExited(f"xdpvhostd exited (rc={self.returncode}) at start:\n{self.log_tail()}")
            if self.control.answers():
                return
            now = time.monotonic()
            if running_since is None and "xdpvhostd running" in self.log():
                running_since = now
            if running_since is not None and now - running_since >= 2.0:
                return
            if now >= deadline:
                raise DaemonExited(f"xdpvhostd not ready within {timeout:.0f}s:\n{self.log_tail()}")
            time.sleep(0.05)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def returncode(self) -> int | None:
        return self.proc.poll() if self.proc else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """SIGKILL, as a crash would; returns once it is gone."""
        self.expect_exit = True
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self._mark("killed with SIGKILL")

    def stop(self, grace: float = 10.0) -> tuple[bool, int | None]:
        """SIGTERM; SIGKILL after grace seconds. Returns (clean exit, rc)."""
        if not self.alive():
            return (self.returncode == 0, self.returncode)
        self.expect_exit = True
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(grace)
            clean = rc == 0
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            clean = False
            self._mark(f"did not exit within {grace:.0f}s of SIGTERM: SIGKILL")
        return clean, rc

    def close(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()
        if self._log_f:
            self._log_f.close()
            self._log_f = None

    def _mark(self, what: str):
        if self._log_f:
            self._log_f.write(f"===== e2e: {what}\n".encode())
            self._log_f.flush()

    # ----- log --------------------------------------------------------------
    def log(self, whole: bool = False) -> str:
        """This run's log (all runs with whole=True)."""
        try:
            with open(self.log_path, "rb") as f:
                if not whole:
                    f.seek(self._log_start)
                return f.read().decode("utf-8", errors="replace")
        except OSError:
            return ""

    def log_tail(self, n: int = 25) -> str:
        return "\n".join(self.log().splitlines()[-n:])

    def log_lines(self, pattern: str, whole: bool = True) -> list[str]:
        rx = re.compile(pattern)
        return [l for l in self.log(whole).splitlines() if rx.search(l)]

    def problems(self) -> list[str]:
        """warn/error/critical lines of every run."""
        return self.log_lines(r"^\S+ (warning|warn|error|critical) ")

    # ----- resources --------------------------------------------------------
    def settled_resources(self, timeout: float = 3.0) -> dict:
        """resources() once the fd count has stayed the same for 0.5 s (a control
        connection the suite just closed may not be closed by the daemon yet)."""
        deadline = time.monotonic() + timeout
        last, same_since = None, time.monotonic()
        while True:
            res = self.resources()
            now = time.monotonic()
            if res["fds"] != last:
                last, same_since = res["fds"], now
            if now - same_since >= 0.5 or now >= deadline:
                return res
            time.sleep(0.1)

    def resources(self) -> dict:
        """Open fds (and by kind), VmRSS / RssAnon / RssShmem / VmSize (KiB) and
        memfd (guest memory) mappings now. RssShmem grows while the daemon
        writes into pages of a connected guest's memory it had not touched
        before; RssAnon is the daemon's own heap and stacks."""
        pid = self.pid
        out = {"fds": None, "fd_kinds": {}, "rss_kb": None, "anon_kb": None, "shmem_kb": None,
               "vsz_kb": None, "memfd_maps": None}
        if not self.alive():
            return out
        fields = {"VmRSS:": "rss_kb", "RssAnon:": "anon_kb", "RssShmem:": "shmem_kb",
                  "VmSize:": "vsz_kb"}
        try:
            kinds: dict[str, int] = {}
            names = os.listdir(f"/proc/{pid}/fd")
            for n in names:
                try:
                    target = os.readlink(f"/proc/{pid}/fd/{n}")
                except OSError:
                    continue
                kind = re.sub(r"[:/].*$", "", target.lstrip("/")) if not target.startswith(
                    "anon_inode:") else target.split(":", 1)[1].strip("[]")
                if target.startswith("/memfd:"):
                    kind = "memfd"
                kinds[kind] = kinds.get(kind, 0) + 1
            out["fds"] = len(names)
            out["fd_kinds"] = dict(sorted(kinds.items()))
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    key = line.split(None, 1)[0] if line.strip() else ""
                    if key in fields:
                        out[fields[key]] = int(line.split()[1])
            with open(f"/proc/{pid}/maps") as f:
                out["memfd_maps"] = sum(1 for l in f if "/memfd:" in l)
        except OSError:
            pass
        return out

    def wait_frontend_gone(self, port: str, disconnects_before: int, timeout: float = 20.0) -> str:
        """After a frontend went away: waits until the daemon saw it (port state
        waiting over the control socket, else one more 'frontend disconnected'
        log line for the port). Returns how it knew."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.control.port_state(port)
            if state == "waiting":
                return "control: state waiting"
            if state is None and self.disconnects(port) > disconnects_before:
                time.sleep(0.5)  # give the teardown a moment after the log line
                return "log: frontend disconnected"
            time.sleep(0.1)
        return f"not seen within {timeout:.0f}s (state {self.control.port_state(port)})"

    def disconnects(self, port: str) -> int:
        return len(self.log_lines(rf"port {re.escape(port)}: frontend disconnected", whole=False))

