"""What every scenario gets: the guest image, the daemon binary, a fresh work
directory per scenario, and factories for guests and daemons that remember
what they started so that cleanup() can stop all of it (also from atexit and
on SIGTERM/SIGINT)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "guest"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pylib"))
from qemu_guest import Guest  # noqa: E402  (tests/guest/qemu_guest.py)
from xvtest import netns  # noqa: E402  (tests/pylib)
from xvtest.process import die_with_parent  # noqa: E402

from daemon_process import Xdpvhostd  # noqa: E402

WORKROOT = "/tmp/xdpvhost-e2e"
NETNS_PREFIX = "xve2e-"


def mac(n: int) -> str:
    return f"52:54:00:e2:e0:{n:02x}"


def port(name: str, socket_path: str, mode: str, mac_addr: str, **extra) -> dict:
    p = {"name": name, "socket": socket_path, "mode": mode, "mac": mac_addr}
    p.update(extra)
    return p


class Context:
    def __init__(self, image: str, daemon_binary: str, *, workroot: str = WORKROOT,
                 iperf_secs: int = 5, short_iperf_secs: int = 3, cycles: int = 5,
                 echo: bool = False, log_level: str | None = None):
        self.image = os.path.abspath(image)
        self.daemon_binary = os.path.abspath(daemon_binary)
        self.workroot = workroot
        self.iperf_secs = iperf_secs
        self.short_iperf_secs = short_iperf_secs
        self.cycles = cycles
        self.echo = echo
        self.log_level = log_level
        self._guests: list[Guest] = []
        self._daemons: list[Xdpvhostd] = []
        self._netns: list[str] = []
        self._bg: list[subprocess.Popen] = []

    def scenario_dir(self, name: str) -> str:
        d = os.path.join(self.workroot, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        return d

    def guest(self, workdir: str, socket_path: str, name: str, **kw) -> Guest:
        kw.setdefault("quiet", True)
        if self.echo:
            kw.setdefault("echo", sys.stdout)
        g = Guest(self.image, socket_path, name=name, workdir=workdir, **kw)
        self._guests.append(g)
        return g

    def daemon(self, workdir: str, ports: list[dict], *, name: str = "xdpvhostd",
               uplinks: list[dict] | None = None, netns: str | None = None,
               extra: dict | None = None) -> Xdpvhostd:
        config: dict = {"ports": ports, "tunables": {"busy_poll_us": 50},
                        "control": {"socket": os.path.join(workdir, "control.sock")},
                        "metrics": {"listen": ""}}
        if uplinks:
            config["uplinks"] = uplinks
        config.update(extra or {})
        d = Xdpvhostd(self.daemon_binary, workdir, config, name=name, netns=netns,
                      log_level=self.log_level)
        self._daemons.append(d)
        return d

    def background(self, cmd: list[str], log_path: str) -> subprocess.Popen:
        """A helper process (iperf3 server, tcpdump) stopped by cleanup()."""
        f = open(log_path, "wb")
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                             preexec_fn=die_with_parent)
        f.close()
        self._bg.append(p)
        return p

    def register_netns(self, name: str):
        self._netns.append(name)

    def cleanup(self):
        """Stops every QEMU, daemon and helper started through this context and
        deletes its namespaces. Idempotent; safe from atexit and signal handlers."""
        for g in self._guests:
            try:
                if g.alive():
                    g.proc.kill()
                    g.proc.wait()
                g.kill()
            except Exception:  # noqa: BLE001
                pass
        self._guests.clear()
        for p in self._bg:
            try:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            except Exception:  # noqa: BLE001
                pass
        self._bg.clear()
        for d in self._daemons:
            try:
                d.close()
            except Exception:  # noqa: BLE001
                pass
        self._daemons.clear()
        for ns in self._netns:
            netns.delete(ns)
        self._netns.clear()


def stale_netns() -> list[str]:
    """Namespaces with this suite's prefix left by a run that was killed."""
    try:
        return netns.names(NETNS_PREFIX)
    except OSError:
        return []
