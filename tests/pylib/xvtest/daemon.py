"""Runs xdpvhostd for a test: writes its config, starts it (optionally
inside a network namespace), waits for its control socket, stops it and
checks it exits cleanly."""

import json
import os
import signal
import subprocess
import time

from .control import Control


def default_binary():
    env = os.environ.get("XDPVHOSTD")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "..", "build", "daemon", "xdpvhostd"))


class Daemon:
    def __init__(self, workdir, config, binary=None, netns=None, log_level="info"):
        self.workdir = workdir
        os.makedirs(workdir, exist_ok=True)
        self.config = dict(config)
        self.config.setdefault("control", {"socket": os.path.join(workdir, "control.sock")})
        self.config.setdefault("metrics", {"listen": ""})
        self.config.setdefault("log", {"level": log_level})
        self.binary = binary or default_binary()
        self.netns = netns
        self.proc = None
        self.log_path = os.path.join(workdir, "xdpvhostd.log")
        self.config_path = os.path.join(workdir, "config.json")

    @property
    def control_path(self):
        return self.config["control"]["socket"]

    def start(self, timeout=10.0):
        with open(self.config_path, "w") as f:
            json.dump(self.config, f, indent=2)
        if os.path.exists(self.control_path):
            os.unlink(self.control_path)
        cmd = [self.binary, "--config", self.config_path]
        if self.netns:
            cmd = ["ip", "netns", "exec", self.netns] + cmd
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"xdpvhostd exited with {self.proc.returncode}:\n{self.tail()}")
            if os.path.exists(self.control_path):
                try:
                    with Control(self.control_path, timeout=2) as c:
                        c.call("version")
                    return self
                except OSError:
                    pass
            time.sleep(0.05)
        raise TimeoutError(f"xdpvhostd did not answer on {self.control_path}:\n{self.tail()}")

    def control(self):
        return Control(self.control_path)

    def call(self, method, **params):
        with self.control() as c:
            return c.call(method, **params)

    @property
    def pid(self):
        """The daemon's own pid (not the `ip netns exec` wrapper's)."""
        return self.proc.pid

    def stop(self, timeout=5.0):
        """SIGTERM; returns the exit code (the daemon must exit within timeout)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self.log.close()

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
            self.log.close()

    def tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-lines:]).decode(errors="replace")
        except OSError:
            return ""

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()


def wait_until(predicate, timeout=10.0, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(interval)
