"""xdpvhostd as a child process of a test: its config file, its command
line (extra arguments; optionally inside a network namespace, with bpffs
mounted there, behind launch prefixes such as taskset/nice), start until the
control socket answers, SIGTERM / SIGKILL, start again on the same config,
the log of every run (each start marked by a `===== xvtest:` line), calls
on the control socket and /proc figures of the process.

The daemon runs in a session of its own (a Ctrl-C meant for the test does
not reach it) and gets SIGKILL when the test process dies. Every wrapper in
the command line execs the next, so `pid` is the daemon's own."""

import json
import os
import re
import signal
import subprocess
import time

from . import control, paths, procfs
from .netns import with_bpffs
from .process import Child, die_with_parent, dies_with_parent, last_lines, read_text
from .waiting import wait_until  # noqa: F401  (imported from here by other suites)


def default_binary():
    """$XDPVHOSTD, else build/daemon/xdpvhostd."""
    return paths.xdpvhostd()


class DaemonExited(RuntimeError):
    """xdpvhostd exited while it was being started."""


class Daemon(Child):
    """workdir holds NAME.config.json, NAME.log and (unless config names
    another) control.sock. `config` gets control.socket, metrics.listen ""
    and, unless log_level is None, log.level filled in where it has none.
    `args` go before --config, `prefix` (a command that execs its arguments)
    before the binary; with `netns` the whole runs under `ip netns exec`,
    with bpffs mounted in its mount namespace if `bpffs`."""

    def __init__(self, workdir, config, binary=None, netns=None, log_level="info", *,
                 args=(), prefix=(), bpffs=False, name="xdpvhostd", start_timeout=10.0,
                 without_fork=False):
        # without_fork: started through process.dies_with_parent (for test
        # processes that have gRPC loaded), not a preexec_fn.
        self.without_fork = without_fork
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.config = dict(config)
        self.config["control"] = dict(self.config.get("control") or {})
        self.config["control"].setdefault("socket", os.path.join(workdir, "control.sock"))
        self.config.setdefault("metrics", {"listen": ""})
        if log_level is not None:
            self.config.setdefault("log", {"level": log_level})
        self.binary = os.path.abspath(binary or default_binary())
        self.netns = netns
        self.args = list(args)
        self.prefix = list(prefix)
        self.bpffs = bpffs
        self.name = name
        self.start_timeout = start_timeout
        self.config_path = os.path.join(workdir, f"{name}.config.json")
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.proc = None
        self.starts = 0
        self.expect_exit = False  # True while the test itself stops it
        self._run_start = 0       # where the current run's output begins in the log

    @property
    def control_path(self):
        return self.config["control"]["socket"]

    def command(self):
        cmd = self.prefix + [self.binary, *self.args, "--config", self.config_path]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + (with_bpffs(cmd) if self.bpffs else cmd)
        return cmd

    # ---- life cycle ----------------------------------------------------------
    def start(self, timeout=None):
        """Writes the config, starts the daemon and returns once its control
        socket answers. DaemonExited if it exits first, TimeoutError if it
        does not answer within timeout (default start_timeout) seconds."""
        if self.alive():
            raise RuntimeError(f"{self.name} already running")
        timeout = self.start_timeout if timeout is None else timeout
        with open(self.config_path, "w") as f:
            json.dump(self.config, f, indent=2)
        if os.path.exists(self.control_path):
            os.unlink(self.control_path)
        self.starts += 1
        self.expect_exit = False
        cmd = self.command()
        self._mark(f"start #{self.starts}: {' '.join(cmd)}")
        self._run_start = os.path.getsize(self.log_path)
        with open(self.log_path, "ab") as log:
            if self.without_fork:
                self.proc = subprocess.Popen(dies_with_parent(cmd), stdin=subprocess.DEVNULL,
                                             stdout=log, stderr=subprocess.STDOUT,
                                             start_new_session=True)
            else:
                self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, start_new_session=True,
                                             preexec_fn=die_with_parent)
        deadline = time.monotonic() + timeout
        while True:
            if not self.alive():
                raise DaemonExited(f"{self.name} exited with {self.returncode}:\n{self.tail()}")
            if os.path.exists(self.control_path) and self.answers("version"):
                return self
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{self.name} did not answer on {self.control_path} within "
                                   f"{timeout:.0f} s:\n{self.tail()}")
            time.sleep(0.05)

    def stop(self, timeout=5.0):
        """SIGTERM; returns the exit code. If the daemon has not exited within
        timeout seconds it gets SIGKILL and TimeoutError is raised."""
        if not self.alive():
            return self.returncode
        self.expect_exit = True
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self._mark(f"did not exit within {timeout:.0f} s of SIGTERM: SIGKILL")
            raise TimeoutError(f"{self.name} did not exit within {timeout:.0f} s of SIGTERM "
                               f"(SIGKILL sent):\n{self.tail()}") from None

    def kill(self):
        """SIGKILL, as a crash would; returns once it is gone. Idempotent."""
        self.expect_exit = True
        if self.alive():
            self.proc.kill()
            self.proc.wait()
            self._mark("killed with SIGKILL")

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()

    # ---- control socket ------------------------------------------------------
    def call(self, method, **params):
        """One request on a fresh connection (xvtest.control.call)."""
        return control.call(self.control_path, method, params)

    def control(self):
        """A connection for many calls (xvtest.control.Control)."""
        return control.Control(self.control_path)

    def answers(self, method="status"):
        try:
            self.call(method)
            return True
        except (control.ControlUnavailable, control.RpcError):
            return False

    def port_state(self, name):
        return self.call("port.get", name=name)["state"]

    # ---- log -----------------------------------------------------------------
    def _mark(self, what):
        with open(self.log_path, "ab") as f:
            f.write(f"===== xvtest: {what}\n".encode())

    def log_text(self, this_run=False):
        """The log of every run, or of the current (last) one only."""
        return read_text(self.log_path, self._run_start if this_run else 0)

    def tail(self, lines=40, this_run=False):
        return last_lines(self.log_text(this_run), lines)

    def log_lines(self, pattern, this_run=False):
        rx = re.compile(pattern)
        return [line for line in self.log_text(this_run).splitlines() if rx.search(line)]

    def problems(self):
        """The warning, error and critical lines of every run."""
        return self.log_lines(r"^\S+ (warning|warn|error|critical) ")

    # ---- /proc ---------------------------------------------------------------
    def resources(self):
        """xvtest.procfs.resources of the daemon (all None once it is gone)."""
        return procfs.resources(self.pid if self.alive() else None)

    def settled_resources(self, timeout=3.0):
        """resources() once the fd count has stayed the same for 0.5 s (a
        control connection just closed may not be closed by the daemon yet)."""
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
