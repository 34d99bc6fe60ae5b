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
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pylib"))
from xvtest import netns  # noqa: E402  (tests/pylib)
from xvtest.daemon import Daemon  # noqa: E402
from xvtest.guest import Guest  # noqa: E402
from xvtest.process import die_with_parent  # noqa: E402

WORKROOT = "/tmp/xdpvhost-e2e"
NETNS_PREFIX = "xve2e-"


def mac(n: int) -> str:
    return f"52:54:00:e2:e0:{n:02x}"


def port(name: str, socket_path: str, mode: str, mac_addr: str, **extra) -> dict:
    p = {"name": name, "socket": socket_path, "mode": mode, "mac": mac_addr}
    p.update(extra)
    return p


def two_ports(workdir: str, mode: str, **vm1_extra) -> tuple[str, str, list[dict]]:
    """Ports vm1 and vm2 (MACs mac(1), mac(2)) on sockets workdir/vm1.sock and
    workdir/vm2.sock in daemon mode `mode`: (socket 1, socket 2, ports)."""
    s1, s2 = os.path.join(workdir, "vm1.sock"), os.path.join(workdir, "vm2.sock")
    return s1, s2, [port("vm1", s1, mode, mac(1), **vm1_extra), port("vm2", s2, mode, mac(2))]


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
        self._daemons: list[Daemon] = []
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

    def daemon(self, workdir: str, ports: list[dict], *, uplinks: list[dict] | None = None,
               netns: str | None = None, extra: dict | None = None) -> Daemon:
        """xdpvhostd (not started): in netns with bpffs mounted there, if given;
        ready within 15 s; --log-level as the suite was told."""
        config: dict = {"ports": ports, "tunables": {"busy_poll_us": 50}}
        if uplinks:
            config["uplinks"] = uplinks
        config.update(extra or {})
        d = Daemon(workdir, config, binary=self.daemon_binary, netns=netns, bpffs=True,
                   log_level=None, args=["--log-level", self.log_level] if self.log_level else [],
                   start_timeout=15.0)
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
        for started, stop in ((self._guests, Guest.sigkill), (self._bg, _sigkill),
                              (self._daemons, Daemon.kill)):
            for x in started:
                try:
                    stop(x)
                except Exception:  # noqa: BLE001 - the rest must still be stopped
                    pass
            started.clear()
        for ns in self._netns:
            netns.delete(ns)
        self._netns.clear()


def _sigkill(p: subprocess.Popen):
    if p.poll() is None:
        p.kill()
        p.wait()


def stale_netns() -> list[str]:
    """Namespaces with this suite's prefix left by a run that was killed."""
    try:
        return netns.names(NETNS_PREFIX)
    except OSError:
        return []
