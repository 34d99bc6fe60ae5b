"""The systems under test. Each one is started with its "endpoint": the
testpmd whose forwarding mode a scenario sets (txonly / rxonly / icmpecho)
and whose port 0 counters it reads.

- xdpvhostd: the daemon on the uplink, the guest (DPDK virtio_user) on a
  vhost-user port of it.
- dpdk / dpdk-bp: the anchor, dpdk-testpmd io-forwarding between net_af_xdp
  and net_vhost (busy_budget=0, and DPDK's default preferred busy polling),
  the same guest on its vhost-user socket.
- afxdp: the bare AF_XDP loop, DPDK's af_xdp PMD alone (no vhost); its own
  testpmd is the endpoint (txonly for transmit, rxonly for receive,
  icmpecho as an AF_XDP ICMP responder)."""

import os
import shutil
import time

from xvtest.daemon import Daemon  # tests/pylib, put on sys.path by run.py
from xvtest.testpmd import eal_args, vhost_vdev, virtio_user_vdev
from xvtest.testpmd_console import TestpmdConsole
from xvtest.waiting import wait_until

from . import launch
from .topology import NODE_NS, UPLINK_IF, GUEST_MAC


class Unavailable(RuntimeError):
    """The backend could not be started or passes no traffic: its rows are
    reported as unavailable, never as numbers."""


def testpmd_base(prefix, cpu, memory_mb=512):
    """Main and forwarding lcore both on `cpu` (testpmd needs a main lcore besides a forwarding one)."""
    return eal_args(prefix, f"0@{cpu},1@{cpu}", memory_mb, main_lcore=0)


AF_XDP_LOG = "--log-level=pmd.net.af_xdp:info"  # says whether preferred busy polling was configured


def log_notes(console):
    return [l.strip() for l in console.tail(20000).splitlines()
            if not l.startswith("$ ")
            and any(w in l.lower() for w in ("busy", "libxdp", "af_xdp", "zero copy", "xsk"))][:12]


def af_xdp_vdev(busy_budget):
    vdev = f"net_af_xdp0,iface={UPLINK_IF},start_queue=0,queue_count=1"
    if busy_budget is not None:
        vdev += f",busy_budget={busy_budget}"
    return vdev


class Guest:
    """The guest for every vhost-user backend: DPDK 22.11 testpmd with
    net_virtio_user (queue_size=1024), pinned to its own core."""

    def __init__(self, ctx, socket_path):
        cmd = testpmd_base("xvb-guest", ctx.cfg.guest_cpu) + [
            f"--vdev={virtio_user_vdev(socket_path, GUEST_MAC)}",
            "--", "-i", "--nb-cores=1", "--total-num-mbufs=16384", "--txpkts=64"]
        cmd = launch.command(cmd, cpu=ctx.cfg.guest_cpu, nice=ctx.cfg.nice or None)
        self.console = TestpmdConsole("guest", cmd, os.path.join(ctx.workdir, "testpmd-guest.log"),
                                      preexec=ctx.groups["guest"].preexec())

    def start(self):
        launch.REGISTRY.add(self.console)
        self.console.start()
        return self

    def stop(self):
        self.console.stop()
        launch.REGISTRY.discard(self.console)


class Backend:
    name = "?"
    description = ""
    has_guest = True
    tunable = False

    def __init__(self, ctx):
        self.ctx = ctx
        self.guest = None
        self.endpoint = None
        self.socket_path = os.path.join(ctx.workdir, "vm1.sock")
        self.info = {}

    def start(self):
        raise NotImplementedError

    def start_guest(self):
        self.guest = Guest(self.ctx, self.socket_path).start()
        self.endpoint = self.guest.console

    def stop(self):
        if self.guest:
            self.guest.stop()
            self.guest = None

    def stats(self):
        return None

    def alive(self):
        """The backend and the endpoint testpmd still run."""
        return self.endpoint is not None and self.endpoint.alive()

    def death_note(self):
        return "the endpoint testpmd exited:\n" + (self.endpoint.tail(1500) if self.endpoint else "")

    def set_tunables(self, **kw):
        raise Unavailable(f"{self.name} has no run-time tunables")


class DpdkBackend(Backend):
    has_guest = True

    def __init__(self, ctx, busy_budget):
        super().__init__(ctx)
        self.busy_budget = busy_budget
        self.name = "dpdk" if busy_budget == 0 else "dpdk-bp"
        self.description = ("dpdk-testpmd io: net_af_xdp (busy_budget=0) <-> net_vhost"
                            if busy_budget == 0 else
                            "dpdk-testpmd io: net_af_xdp (default preferred busy polling) <-> net_vhost")
        self.console = None

    def start(self):
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        cpu = self.ctx.cfg.backend_cpu
        cmd = testpmd_base(f"xvb-{self.name}", cpu) + [
            AF_XDP_LOG, f"--vdev={af_xdp_vdev(0 if self.busy_budget == 0 else None)}",
            f"--vdev={vhost_vdev(self.socket_path)}",
            "--", "-i", "--forward-mode=io", "--nb-cores=1", "--total-num-mbufs=16384"]
        cmd = launch.command(cmd, netns=NODE_NS, cpu=cpu, nice=self.ctx.cfg.nice or None, bpffs=True)
        self.console = TestpmdConsole(self.name, cmd, os.path.join(self.ctx.workdir, f"testpmd-{self.name}.log"),
                                      preexec=self.ctx.groups["backend"].preexec())
        launch.REGISTRY.add(self.console)
        try:
            self.console.start()
            self.console.command("start")
        except Exception as e:  # noqa: BLE001
            raise Unavailable(f"{self.name} did not start: {e}") from e
        self.info["log_notes"] = log_notes(self.console)
        self.start_guest()
        time.sleep(0.5)  # the vhost port's link comes up after the guest negotiated

    def stop(self):
        super().stop()
        if self.console:
            self.console.stop()
            launch.REGISTRY.discard(self.console)
            self.console = None

    def stats(self):
        return {f"port{p}": self.console.port_stats(p) for p in (0, 1)}

    def alive(self):
        return super().alive() and self.console is not None and self.console.alive()

    def death_note(self):
        if self.console is not None and not self.console.alive():
            return f"{self.name} testpmd exited:\n{self.console.tail(1500)}"
        return super().death_note()


class BareAfXdp(Backend):
    name = "afxdp"
    description = "bare AF_XDP loop: dpdk-testpmd net_af_xdp alone (busy_budget=0), txonly / rxonly / icmpecho"
    has_guest = False

    def start(self):
        cpu = self.ctx.cfg.backend_cpu
        cmd = testpmd_base("xvb-afxdp", cpu) + [
            AF_XDP_LOG, f"--vdev={af_xdp_vdev(0)}", "--", "-i", "--nb-cores=1", "--total-num-mbufs=16384",
            "--txpkts=64"]
        cmd = launch.command(cmd, netns=NODE_NS, cpu=cpu, nice=self.ctx.cfg.nice or None, bpffs=True)
        self.console = TestpmdConsole("afxdp", cmd, os.path.join(self.ctx.workdir, "testpmd-afxdp.log"),
                                      preexec=self.ctx.groups["backend"].preexec())
        launch.REGISTRY.add(self.console)
        try:
            self.console.start()
        except Exception as e:  # noqa: BLE001
            raise Unavailable(f"afxdp did not start: {e}") from e
        self.info["log_notes"] = log_notes(self.console)
        self.endpoint = self.console

    def stop(self):
        if self.console:
            self.console.stop()
            launch.REGISTRY.discard(self.console)
            self.console = None

    def stats(self):
        return {"port0": self.console.port_stats(0)}


def xdpvhostd_config(ctx, ports, control_dir, uplink_if=UPLINK_IF):
    """The daemon's config in every bench run: uplink up0 on the veth, one
    service thread on the backend CPU, server-mode ports (name, socket, MAC)
    behind the uplink, the control socket in control_dir, no metrics."""
    return {
        "uplinks": [{"name": "up0", "interface": uplink_if, "queues": [0], "bind": "auto"}],
        "ports": [{"name": name, "socket": sock, "mode": "server", "mac": mac, "uplink": "up0"}
                  for name, sock, mac in ports],
        "tunables": dict(ctx.cfg.xdpvhostd_tunables),
        "threads": {"count": 1, "cpus": [ctx.cfg.backend_cpu]},
        "control": {"socket": os.path.join(control_dir, "control.sock")},
        "metrics": {"listen": ""},
        "log": {"level": "info"},
    }


class XdpvhostdBackend(Backend):
    name = "xdpvhostd"
    description = "xdpvhostd: uplink on the veth (AF_XDP), guest on a vhost-user port"
    tunable = True

    def __init__(self, ctx):
        super().__init__(ctx)
        self.daemon = None

    def config(self):
        return xdpvhostd_config(self.ctx, [("vm1", self.socket_path, GUEST_MAC)], self.ctx.workdir)

    def start(self):
        binary = self.ctx.xdpvhostd
        if not binary or not os.access(binary, os.X_OK):
            raise Unavailable(f"no xdpvhostd binary ({binary!r}); pass --xdpvhostd or set XDPVHOSTD")
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        workdir = os.path.join(self.ctx.workdir, "xdpvhostd")
        shutil.rmtree(workdir, ignore_errors=True)
        # In the node namespace with bpffs, pinned to the backend core, at the
        # backend's nice level; in a session of its own (a Ctrl-C meant for the
        # harness must not reach it: the teardown stops it).
        self.daemon = Daemon(workdir, self.config(), binary=binary, netns=NODE_NS, bpffs=True,
                             prefix=launch.command([], cpu=self.ctx.cfg.backend_cpu,
                                                   nice=self.ctx.cfg.nice or None))
        launch.REGISTRY.add(self.daemon)
        try:
            self.daemon.start(timeout=15)
        except (RuntimeError, TimeoutError) as e:
            raise Unavailable(f"xdpvhostd refused the configuration or did not start: {e}") from e
        self.ctx.groups["backend"].add(self.daemon.pid)
        try:
            self.info["uplinks"] = self.daemon.call("uplink.list")
        except Exception as e:  # noqa: BLE001
            self.info["uplinks"] = f"uplink.list failed: {e}"
        self.start_guest()
        try:
            wait_until(lambda: self.daemon.port_state("vm1") == "running", timeout=10)
        except TimeoutError:
            raise Unavailable(f"port vm1 never reached 'running' (state {self.daemon.port_state('vm1')!r})"
                              f"\n{self.daemon.tail(15)}") from None

    def stop(self):
        super().stop()
        if self.daemon:
            try:
                code = self.daemon.stop()
                self.info["exit_code"] = code
            except Exception:  # noqa: BLE001
                self.daemon.kill()
            launch.REGISTRY.discard(self.daemon)
            self.daemon = None

    def stats(self):
        return self.daemon.call("stats.get")

    def alive(self):
        return super().alive() and self.daemon is not None and self.daemon.alive()

    def death_note(self):
        if self.daemon is not None and not self.daemon.alive():
            return f"xdpvhostd exited with {self.daemon.returncode}:\n{self.daemon.tail(15)}"
        return super().death_note()

    def set_tunables(self, **kw):
        return self.daemon.call("tunables.set", **kw)

    def uplink_list(self):
        return self.daemon.call("uplink.list")

    def log_tail(self, lines=20):
        return self.daemon.tail(lines) if self.daemon else ""


def make(name, ctx):
    if name == "xdpvhostd":
        return XdpvhostdBackend(ctx)
    if name == "dpdk":
        return DpdkBackend(ctx, 0)
    if name == "dpdk-bp":
        return DpdkBackend(ctx, None)
    if name == "afxdp":
        return BareAfXdp(ctx)
    raise ValueError(name)


ALL = ("xdpvhostd", "dpdk", "dpdk-bp", "afxdp")
