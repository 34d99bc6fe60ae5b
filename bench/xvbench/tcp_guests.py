"""Real-guest TCP: the same QEMU guest image (TCG,
1 vCPU, tests/guest) running iperf3 over three paths, side by side and
interleaved (tap xdpvhostd dpdk tap xdpvhostd dpdk ...):

    tap        a tap device on a Linux bridge, QEMU's own virtio-net
               (vhost=on only where /dev/vhost-net exists), the uplink veth
               on the same bridge: KubeVirt's default bridge binding
    xdpvhostd  vhost-user ports vm1, vm2 on the daemon, uplink up0 = AF_XDP
               on the veth, default device options (TSO negotiated)
    dpdk       dpdk-testpmd io forwarding net_af_xdp <-> net_vhost (one guest)

Network (all names xvbt-*, addresses only inside the namespaces and guests):

    xvbt-node namespace                                  xvbt-out namespace
    tap:  xvbt-tap1, xvbt-tap2, xvbt-up on bridge xvbt-br
    xdpvhostd / testpmd: AF_XDP on xvbt-up   xvbt-up <== veth ==> xvbt-peer 10.78.0.100/24
    guests vm1 10.78.0.1, vm2 10.78.0.2                  iperf3 -s, tx checksum offload off

Scenarios, iperf3 TCP, client always in vm1, results parsed from its console:

    tcp_guest_to_outside   vm1 -> xvbt-out          iperf3 -c 10.78.0.100
    tcp_outside_to_guest   xvbt-out -> vm1          iperf3 -c 10.78.0.100 -R
    tcp_vm_to_vm           vm1 -> vm2 (one node)    iperf3 -c 10.78.0.2

Each guest boots once per slot (backend x repetition) and takes commands on a
second serial port (a unix socket of QEMU): `ID SHELL-COMMAND` per line; it
runs them and prints `XV-CTL id=ID rc=RC` on its console. vm2 runs
`iperf3 -s -D` from boot.

Placement (2 cores): vm1's vCPU thread alone on the guest CPU; the backend
(xdpvhostd's service thread / testpmd / for tap QEMU's main-loop threads),
the peer's iperf3, vm2's vCPU and every QEMU's non-vCPU threads on the
backend CPU.

CPU accounting (cgroup v1 cpuacct, threads placed one by one through
`tasks`): `backend` = xdpvhostd or testpmd; `qemu_io` = every QEMU thread
except its vCPU threads (for tap this *is* the backend: with vhost=off,
QEMU's main loop runs virtio-net, reads and writes the tap, and the kernel's
bridge/veth work runs inside those syscalls); `guest` = vCPU threads; `load`
= the peer's iperf3. For tap, work QEMU does for the device inside the vCPU
thread (the notify exit of a kick under TCG) is not counted as backend: the
tap figure is a lower bound.
"""

import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import time

from xvtest import netns
from xvtest.daemon import Daemon
from xvtest.guest import Guest, GuestError
from xvtest.testpmd import eal_args, vhost_vdev
from xvtest.testpmd_console import TestpmdConsole
from xvtest.waiting import wait_until

from . import backends, cpu_account, launch, records, topology

SCENARIOS = ("tcp_guest_to_outside", "tcp_outside_to_guest", "tcp_vm_to_vm")
BACKENDS = ("tap", "xdpvhostd", "dpdk", "tap-seg")
TITLES = {"tap": "tap + Linux bridge (QEMU virtio-net)", "xdpvhostd": "xdpvhostd (vhost-user → AF_XDP)",
          "dpdk": "DPDK testpmd (net_vhost + net_af_xdp; VM ↔ VM: net_vhost ↔ net_vhost, tso=1)",
          "tap-seg": "tap, uplink veth with TSO/GSO off (the peer receives MTU frames, as from a wire)"}
SCEN_TITLES = {"tcp_guest_to_outside": "guest → outside", "tcp_outside_to_guest": "outside → guest",
               "tcp_vm_to_vm": "VM ↔ VM (one node)"}

NODE_NS = "xvbt-node"
PEER_NS = "xvbt-out"
UPLINK_IF = "xvbt-up"
PEER_IF = "xvbt-peer"
BRIDGE = "xvbt-br"
TAPS = ("xvbt-tap1", "xvbt-tap2")
NET = "10.78.0"
PEER_IP = f"{NET}.100"
VM_IPS = (f"{NET}.1", f"{NET}.2")
VM_MACS = ("52:54:00:78:00:01", "52:54:00:78:00:02")
WORKDIR = "/tmp/xdpvhost-bench/tcp"
GROUPS = ("backend", "qemu_io", "guest", "load")

# The guest's command loop on /dev/ttyS1 (the second serial port).
CTL_LOOP = r"""
[ "$XV_TCP_ROLE" = server ] && iperf3 -s -D > /dev/null 2>&1
stty -F /dev/ttyS1 raw -echo
exec 3< /dev/ttyS1
echo "XV-READY ctl t=$(cut -d' ' -f1 /proc/uptime)"
while read -r id line <&3; do
  [ "$id" = quit ] && break
  sh -c "$line"
  echo "XV-CTL id=$id rc=$? t=$(cut -d' ' -f1 /proc/uptime)"
done
"""

DAEMON_COUNTERS = ("gso_rx", "gso_tx", "gso_segments", "csum_software", "csum_offloaded")
UPLINK_COUNTERS = ("gro_frames", "gro_segments", "gso_segments", "csum_software", "csum_offloaded",
                   "rx_packets", "tx_packets", "rx_ring_full", "rx_dropped", "rx_fill_ring_empty_descs",
                   "tx_ring_empty_descs")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Unavailable(RuntimeError):
    pass


# --- cgroups by thread ---------------------------------------------------------

class ThreadGroup(cpu_account.CpuGroup):
    """A CpuGroup that also takes single threads (cgroup v1 `tasks`)."""

    def add_thread(self, tid):
        name = "tasks" if self.kind == "v1" else "cgroup.threads"
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(tid))

    def tids(self):
        name = "tasks" if self.kind == "v1" else "cgroup.threads"
        try:
            with open(os.path.join(self.path, name)) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []


def threads_of(pid):
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


# --- topology -------------------------------------------------------------------

class TcpTopology:
    """Two namespaces, one veth; for tap also the bridge and two taps."""

    def __init__(self, mode, segment_uplink=False):
        self.mode = mode
        self.segment_uplink = segment_uplink
        self.facts = {}

    @staticmethod
    def remove_stale():
        for t in TAPS:
            subprocess.run(["ip", "-n", NODE_NS, "link", "del", t], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
        for ns in (NODE_NS, PEER_NS):
            netns.delete(ns)

    def create(self):
        self.remove_stale()
        netns.create(NODE_NS)
        netns.create(PEER_NS)
        netns.veth(NODE_NS, UPLINK_IF, PEER_NS, PEER_IF)
        netns.run("ip", "-n", PEER_NS, "addr", "add", f"{PEER_IP}/24", "dev", PEER_IF)
        # Complete checksums in every frame the peer sends, as a real NIC
        # delivers them (DESIGN.md: a guest behind AF_XDP drops CHECKSUM_PARTIAL).
        r = netns.run_in(PEER_NS, "ethtool", "-K", PEER_IF, "tx", "off", check=False)
        self.facts["peer_tx_offload_off"] = r.returncode == 0
        if self.mode == "tap":
            netns.run("ip", "-n", NODE_NS, "link", "add", BRIDGE, "type", "bridge", "stp_state", "0",
                      "forward_delay", "0")
            netns.run("ip", "-n", NODE_NS, "link", "set", UPLINK_IF, "master", BRIDGE)
            for t in TAPS:
                netns.run("ip", "-n", NODE_NS, "tuntap", "add", "dev", t, "mode", "tap", "vnet_hdr")
                netns.run("ip", "-n", NODE_NS, "link", "set", t, "master", BRIDGE, "up")
            netns.run("ip", "-n", NODE_NS, "link", "set", BRIDGE, "up")
            # A real NIC under the bridge coalesces with GRO; veth does it
            # only when asked (NAPI GRO). Without it the tap guest would see
            # MTU frames only.
            r = netns.run_in(NODE_NS, "ethtool", "-K", UPLINK_IF, "gro", "on", check=False)
            self.facts["uplink_gro_on"] = r.returncode == 0
            if self.segment_uplink:
                # tap-seg: frames leave the bridge MTU-sized (software GSO in
                # the sender's context), as a wire would carry them.
                r = netns.run_in(NODE_NS, "ethtool", "-K", UPLINK_IF, "tso", "off", "gso", "off",
                                 check=False)
                self.facts["uplink_tso_gso_off"] = r.returncode == 0
        return self

    def link_stats(self):
        taps = tuple((NODE_NS, t) for t in (TAPS if self.mode == "tap" else ()))
        return topology.link_stats(((NODE_NS, UPLINK_IF), (PEER_NS, PEER_IF)) + taps)

    def peer_nstat(self):
        out = netns.run_in(PEER_NS, "nstat", "-asz", check=False).stdout
        keep = ("TcpRetransSegs", "TcpInSegs", "TcpOutSegs", "TcpInCsumErrors", "TcpExtTCPOFOQueue")
        res = {}
        for line in out.splitlines():
            m = re.match(r"^(\w+)\s+(\d+)", line)
            if m and m.group(1) in keep:
                res[m.group(1)] = int(m.group(2))
        return res

    def destroy(self):
        self.remove_stale()


# --- guests ----------------------------------------------------------------------

class BenchGuest(Guest):
    """The test guest with QEMU started inside the node namespace (a tap is
    opened there), a command channel on its second serial port, and its
    threads placed for the benchmark once it booted."""

    def __init__(self, image, socket_path, *, name, index, cpus, tap=None, **kw):
        self.index = index
        self.ctl_path = os.path.join(kw["workdir"], f"{name}.ctl")
        self.cpus = cpus
        self.tap = tap
        qemu_args = ["-chardev", f"socket,id=xvctl,path={self.ctl_path},server=on,wait=off",
                     "-serial", "chardev:xvctl"]
        kernel_args = []
        if tap:
            vhost = "on" if os.path.exists("/dev/vhost-net") else "off"
            self.vhost = vhost
            qemu_args += ["-netdev", f"tap,id=net0,ifname={tap},script=no,downscript=no,vhost={vhost}",
                          "-device", f"virtio-net-pci,netdev=net0,mac={kw['mac']},vectors=0"]
            kernel_args.append(f"xv.mac={kw['mac']}")
        super().__init__(image, socket_path, name=name, qemu_args=qemu_args, kernel_args=kernel_args,
                         vectors=0, quiet=True, **kw)
        self.sock = None
        self.seq = 0

    def build_cmdline(self):
        return ["ip", "netns", "exec", NODE_NS, "taskset", "-c", self.cpus["io"]] + super().build_cmdline()

    def vcpu_tids(self):
        reply = self.qmp("query-cpus-fast")
        return [c["thread-id"] for c in reply.get("return", [])]

    def place(self, groups, nice=0):
        """vCPU threads -> guest group and the vCPU CPU; every other thread
        -> qemu_io group and the I/O CPU; all at the nice level."""
        vcpus = set(self.vcpu_tids())
        io_cpu, vcpu_cpu = int(self.cpus["io"]), int(self.cpus["vcpu"])
        for tid in threads_of(self.proc.pid):
            try:
                if nice:
                    os.setpriority(os.PRIO_PROCESS, tid, nice)
                if tid in vcpus:
                    groups["guest"].add_thread(tid)
                    os.sched_setaffinity(tid, {vcpu_cpu})
                else:
                    groups["qemu_io"].add_thread(tid)
                    os.sched_setaffinity(tid, {io_cpu})
            except OSError:
                pass  # a short-lived thread ended
        return sorted(vcpus)

    def connect_ctl(self, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.ctl_path)
                self.sock = s
                return
            except OSError:
                s.close()
                if time.monotonic() > deadline or not self.alive():
                    raise GuestError(f"{self.name}: control socket {self.ctl_path} does not answer")
                time.sleep(0.1)

    def run_cmd(self, command, timeout):
        """Runs a shell command in the guest; returns (rc, first console line index after it)."""
        self.seq += 1
        since = self.poll()
        self.sock.sendall(f"{self.seq} {command}\n".encode())
        m = self.wait_for(rf"^XV-CTL id={self.seq} rc=(\d+)", timeout=timeout, since=since)
        return int(m.group(1)), since

    def quit(self):
        try:
            if self.sock:
                self.sock.sendall(b"quit\n")
                self.sock.close()
        except OSError:
            pass
        self.sock = None


# --- backends ---------------------------------------------------------------------

class TcpBackend:
    name = "?"
    guests_needed = 2
    reaches_peer = True
    counted = "backend"          # the group whose CPU is this path's backend CPU

    def __init__(self, ctx):
        self.ctx = ctx
        self.info = {}
        sub = "-pair" if getattr(self, "pair", False) else ""
        self.workdir = os.path.join(ctx.tcp_workdir, self.name + sub)
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)

    def socket_path(self, i):
        return os.path.join(self.workdir, f"vm{i + 1}.sock")

    def guest_kwargs(self, i):
        return {"reconnect": 1, "socket_path": self.socket_path(i)}

    def start(self):
        pass

    def started_guests(self):
        pass

    def stop(self):
        pass

    def alive(self):
        return True

    def stats(self):
        return None

    def scenarios(self):
        return SCENARIOS


class TapBackend(TcpBackend):
    name = "tap"
    counted = "qemu_io"
    mode = "tap"

    def guest_kwargs(self, i):
        return {"tap": TAPS[i], "socket_path": None}

    def stats(self):
        return {"links": self.ctx.tcp_topo.link_stats()}


class TapSegBackend(TapBackend):
    name = "tap-seg"

    def scenarios(self):
        return ("tcp_guest_to_outside",)


class XdpvhostdTcp(TcpBackend):
    name = "xdpvhostd"
    mode = "uplink"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.daemon = None

    def config(self):
        ports = [(f"vm{i + 1}", self.socket_path(i), VM_MACS[i]) for i in range(self.guests_needed)]
        return backends.xdpvhostd_config(self.ctx, ports, self.workdir, UPLINK_IF)

    def start(self):
        binary = self.ctx.xdpvhostd
        if not binary or not os.access(binary, os.X_OK):
            raise Unavailable(f"no xdpvhostd binary ({binary!r}); pass --xdpvhostd or set XDPVHOSTD")
        self.daemon = Daemon(os.path.join(self.workdir, "daemon"), self.config(), binary=binary,
                             netns=NODE_NS, bpffs=True,
                             prefix=launch.command([], cpu=self.ctx.cfg.backend_cpu,
                                                   nice=self.ctx.cfg.nice or None))
        launch.REGISTRY.add(self.daemon)
        try:
            self.daemon.start(timeout=15)
        except (RuntimeError, TimeoutError) as e:
            raise Unavailable(f"xdpvhostd refused the configuration or did not start: {e}") from e
        self.ctx.tcp_groups["backend"].add(self.daemon.pid)
        self.info["binary"] = binary
        self.info["binary_mtime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.stat(binary).st_mtime))
        try:
            self.info["uplinks"] = self.daemon.call("uplink.list")
        except Exception as e:  # noqa: BLE001
            self.info["uplinks"] = f"uplink.list failed: {e}"

    def started_guests(self):
        for i in range(self.guests_needed):
            wait_until(lambda i=i: self.daemon.port_state(f"vm{i + 1}") == "running", timeout=60)

    def stop(self):
        if self.daemon:
            try:
                self.info["exit_code"] = self.daemon.stop()
            except Exception:  # noqa: BLE001
                self.daemon.kill()
            launch.REGISTRY.discard(self.daemon)
            self.daemon = None

    def alive(self):
        return self.daemon is not None and self.daemon.alive()

    def stats(self):
        return self.daemon.call("stats.get")


class DpdkTcp(TcpBackend):
    """testpmd io forwarding between net_af_xdp (port 0) and net_vhost
    (port 1), both lcores on the backend CPU. One guest: io forwarding
    pairs ports and cannot switch between two guests and an uplink."""
    name = "dpdk"
    mode = "uplink"
    guests_needed = 1

    def __init__(self, ctx):
        super().__init__(ctx)
        self.console = None

    pair = False   # True: the VM <-> VM sub-slot (net_vhost <-> net_vhost, no uplink)

    def scenarios(self):
        return ("tcp_vm_to_vm",) if self.pair else ("tcp_guest_to_outside", "tcp_outside_to_guest")

    def start(self):
        cpu = self.ctx.cfg.backend_cpu
        if self.pair:
            # Guest to guest: tso=1 lets 64 KiB GSO frames pass whole.
            ports = [f"--vdev={vhost_vdev(self.socket_path(i), index=i)},tso=1" for i in range(2)]
        else:
            # tso=0: net_af_xdp cannot transmit a TSO frame, so the guest must
            # not send one toward the uplink.
            ports = [f"--vdev=net_af_xdp0,iface={UPLINK_IF},start_queue=0,queue_count=1,busy_budget=0",
                     f"--vdev={vhost_vdev(self.socket_path(0))}"]
        self.info["vdevs"] = ports
        cmd = eal_args("xvbt-dpdk", f"0@{cpu},1@{cpu}", 512, main_lcore=0) + ports + [
            "--", "-i", "--forward-mode=io", "--nb-cores=1", "--total-num-mbufs=32768"]
        cmd = launch.command(cmd, netns=NODE_NS, cpu=cpu, nice=self.ctx.cfg.nice or None, bpffs=True)
        self.console = TestpmdConsole("dpdk", cmd, os.path.join(self.workdir, "testpmd.log"),
                                      preexec=self.ctx.tcp_groups["backend"].preexec())
        launch.REGISTRY.add(self.console)
        try:
            self.console.start()
            self.console.command("start")
        except Exception as e:  # noqa: BLE001
            raise Unavailable(f"dpdk testpmd did not start: {e}") from e

    def stop(self):
        if self.console:
            self.console.stop()
            launch.REGISTRY.discard(self.console)
            self.console = None

    def alive(self):
        return self.console is not None and self.console.alive()

    def stats(self):
        return {f"port{p}": self.console.port_stats(p) for p in (0, 1)}


class DpdkPairTcp(DpdkTcp):
    pair = True
    guests_needed = 2
    mode = "pair"
    reaches_peer = False


def make(name, ctx, pair=False):
    if name == "dpdk" and pair:
        return DpdkPairTcp(ctx)
    return {"tap": TapBackend, "tap-seg": TapSegBackend, "xdpvhostd": XdpvhostdTcp, "dpdk": DpdkTcp}[name](ctx)


# --- measurement -------------------------------------------------------------------

def cpu_snap(ctx):
    return {n: g.read() for n, g in ctx.tcp_groups.items()}


def counter_delta(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        out = {}
        for k in b:
            if k in a and k != "t":
                d = counter_delta(a[k], b[k])
                if d not in (None, 0, {}):
                    out[k] = d
        return out
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return b - a
    return None


def offload_counters(delta):
    """The daemon's GSO/GRO counters out of a stats.get delta: per port
    gso_rx, gso_tx, gso_segments, csum_software, drops by reason; per uplink
    gro_frames, gro_segments, ..."""
    if not isinstance(delta, dict):
        return None
    out = {"ports": {}, "uplinks": {}}
    for name, p in (delta.get("ports") or {}).items():
        if isinstance(p, dict):
            c = {k: p.get(k, 0) for k in DAEMON_COUNTERS}
            for extra in ("drops", "offload_refused", "queue_errors"):
                if p.get(extra):
                    c[extra] = p[extra]
            out["ports"][name] = c
    for name, u in (delta.get("uplinks") or {}).items():
        if isinstance(u, dict):
            c = {k: u.get(k, 0) for k in UPLINK_COUNTERS}
            if u.get("drops"):
                c["drops"] = u["drops"]
            out["uplinks"][name] = c
    return out


def iperf_figures(result):
    data = (result or {}).get("iperf3") or {}
    end = data.get("end") or {}
    sent, recv = end.get("sum_sent") or {}, end.get("sum_received") or {}
    if data.get("error") or not recv:
        return {"error": data.get("error") or "no iperf3 end summary", "rc": (result or {}).get("rc")}
    streams = end.get("streams") or [{}]
    snd = (streams[0] or {}).get("sender") or {}
    return {"mbps": round(recv.get("bits_per_second", 0) / 1e6, 1),
            "sent_mbps": round(sent.get("bits_per_second", 0) / 1e6, 1),
            "retransmits": sent.get("retransmits"), "bytes": recv.get("bytes"),
            "seconds": round(recv.get("seconds", 0), 3),
            "max_snd_cwnd": snd.get("max_snd_cwnd"), "mean_rtt_us": snd.get("mean_rtt"),
            "intervals_mbps": [round(dig(i, "sum", "bits_per_second") / 1e6, 1)
                               for i in data.get("intervals") or [] if dig(i, "sum", "bits_per_second") is not None],
            "sender_cpu_pct": dig(end, "cpu_utilization_percent", "remote_total" if data.get(
                "start", {}).get("test_start", {}).get("reverse") else "host_total"),
            "rc": result.get("rc")}


def dig(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


def run_iperf(ctx, sut, guests, scen, secs):
    vm1 = guests[0]
    target = VM_IPS[1] if scen == "tcp_vm_to_vm" else PEER_IP
    # -i 1 (after xv's -i 0): per-second intervals, so a stall shows.
    args = f"{target} {secs}" + (" -R" if scen == "tcp_outside_to_guest" else "") + " -i 1"
    s0 = sut.stats()
    n0 = ctx.tcp_topo.peer_nstat()
    c0 = cpu_snap(ctx)
    rc, since = vm1.run_cmd(f"/lib/xv/xv iperf3-client {args}", timeout=secs + 90)
    c1 = cpu_snap(ctx)
    s1 = sut.stats()
    n1 = ctx.tcp_topo.peer_nstat()
    res = vm1.wait_result("iperf3", timeout=5, since=since)
    fig = iperf_figures(res)
    cpu = {n: cpu_account.delta(c0[n], c1[n]) for n in c0}
    fig["cpu"] = cpu
    fig["backend_group"] = sut.counted
    gbit = (fig.get("bytes") or 0) * 8 / 1e9
    fig["backend_ms_per_gbit"] = round(cpu[sut.counted]["cpu_ns"] / 1e6 / gbit, 1) if gbit else None
    fig["backend_core_fraction"] = cpu[sut.counted]["core_fraction"]
    if sut.name.startswith("tap"):
        fig["daemon_cpu_note"] = "tap backend = QEMU non-vCPU threads (main loop: virtio-net + tap I/O)"
    d = counter_delta(s0, s1) if s0 is not None else None
    fig["backend_counters"] = d
    if sut.name == "xdpvhostd":
        fig["offload"] = offload_counters(d)
    fig["peer_nstat"] = counter_delta(n0, n1)
    fig["guest_rc"] = rc
    return fig


def one_line(scen, r):
    if r.get("error"):
        return f"error {r['error']}"
    s = (f"{r['mbps']:.0f} Mbit/s, {r.get('retransmits')} retr, backend "
         f"{r['backend_core_fraction'] * 100:.0f}% core, {r['backend_ms_per_gbit']} ms/Gbit")
    off = r.get("offload")
    if off:
        p = {k: v for k, v in (off.get("ports") or {}).items() if any(
            isinstance(x, (int, dict)) and x for x in v.values())}
        u = off.get("uplinks", {}).get("up0", {})
        s += (f"; ports {json.dumps(p)}; up0 gro {u.get('gro_frames')}/{u.get('gro_segments')}"
              f" gso_seg {u.get('gso_segments')}")
    return s


def boot_guests(ctx, sut):
    cpus_vm1 = {"io": str(ctx.cfg.backend_cpu), "vcpu": str(ctx.cfg.guest_cpu)}
    cpus_vm2 = {"io": str(ctx.cfg.backend_cpu), "vcpu": str(ctx.cfg.backend_cpu)}
    guests = []
    for i in range(sut.guests_needed):
        kw = sut.guest_kwargs(i)
        env_role = "server" if i == 1 else "client"
        g = BenchGuest(ctx.image, kw.pop("socket_path"), name=f"vm{i + 1}", index=i,
                       cpus=cpus_vm1 if i == 0 else cpus_vm2, mac=VM_MACS[i], ip=f"{VM_IPS[i]}/24",
                       peer=PEER_IP, workdir=sut.workdir, accel="tcg",
                       cmd=f"XV_TCP_ROLE={env_role}; export XV_TCP_ROLE\n" + CTL_LOOP, **kw)
        launch.REGISTRY.add(g)
        guests.append(g)
        g.start()
    for g in guests:
        g.wait_for(r"^XV-READY ctl", timeout=120)
        g.vcpus = g.place(ctx.tcp_groups, ctx.cfg.nice)
        g.connect_ctl()
    sut.started_guests()
    # Reachability: vm1 -> peer, and vm1 -> vm2 when both run.
    for g in guests if sut.reaches_peer else ():
        rc, _ = g.run_cmd(f"/lib/xv/xv wait-peer {PEER_IP} 60", timeout=90)
        if rc != 0:
            raise Unavailable(f"{g.name} cannot reach the peer {PEER_IP} over {sut.name}")
    if len(guests) > 1:
        rc, _ = guests[0].run_cmd(f"/lib/xv/xv wait-peer {VM_IPS[1]} 30", timeout=60)
        if rc != 0:
            raise Unavailable(f"vm1 cannot reach vm2 over {sut.name}")
    return guests


def run_slot(ctx, name, rep, scenarios, secs):
    if name == "dpdk":
        # testpmd's io forwarding pairs ports: one instance cannot switch
        # between two guests and an uplink. Uplink scenarios with one guest,
        # then VM <-> VM with net_vhost <-> net_vhost.
        run_sub_slot(ctx, name, rep, [s for s in scenarios if s != "tcp_vm_to_vm"], secs, False)
        run_sub_slot(ctx, name, rep, [s for s in scenarios if s == "tcp_vm_to_vm"], secs, True)
        return
    sut = make(name, ctx)
    for s in scenarios:
        if s not in sut.scenarios():
            ctx.recorder.write(rep, name, s, {"seconds": secs}, "unavailable",
                               error=f"{name} runs only {', '.join(sut.scenarios())}")
    run_sub_slot(ctx, name, rep, scenarios, secs, False, sut)


def run_sub_slot(ctx, name, rep, scenarios, secs, pair, sut=None):
    rec = ctx.recorder
    sut = sut or make(name, ctx, pair)
    wanted = [s for s in scenarios if s in sut.scenarios()]
    if not wanted:
        return
    ctx.tcp_topo = TcpTopology("tap" if name.startswith("tap") else "uplink",
                               segment_uplink=name == "tap-seg")
    if "tcp_vm_to_vm" not in wanted:
        sut.guests_needed = 1
    log(f"tcp rep {rep}: {name}{' (VM <-> VM: net_vhost <-> net_vhost)' if pair else ''}")
    lb = records.loadavg()
    guests = []
    peer_iperf = None
    try:
        ctx.tcp_topo.create()
        peer_iperf = subprocess.Popen(
            launch.command(["iperf3", "-s"], netns=PEER_NS, cpu=ctx.cfg.backend_cpu,
                           nice=ctx.cfg.nice or None),
            stdout=open(os.path.join(sut.workdir, "peer-iperf3.log"), "wb"), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=ctx.tcp_groups["load"].preexec())
        launch.REGISTRY.add(peer_iperf)
        sut.start()
        t0 = time.monotonic()
        guests = boot_guests(ctx, sut)
        nic = guests[0].results("nic")
        info = {"backend_info": sut.info, "topology": ctx.tcp_topo.facts,
                "features": nic[-1].get("feature_names") if nic else None,
                "vcpu_tids": [getattr(g, "vcpus", None) for g in guests],
                "boot_s": round(time.monotonic() - t0, 1)}
        if name.startswith("tap"):
            info["tap_vhost"] = guests[0].vhost
        rec.write(rep, name, "tcp_slot", {"pair": pair}, "ok", result=info, load_before=lb)
        log(f"  guests up in {info['boot_s']} s; vm1 features: {' '.join(info['features'] or [])}")
        order = wanted if rep % 2 == 0 else list(reversed(wanted))
        for scen in order:
            if ctx.check_stop:
                ctx.check_stop()
            if not sut.alive():
                rec.write(rep, name, scen, {"seconds": secs}, "error", error=f"{name} died")
                continue
            lb = records.loadavg()
            try:
                res = run_iperf(ctx, sut, guests, scen, secs)
                status = "error" if res.get("error") else "ok"
                rec.write(rep, name, scen, {"seconds": secs}, status, result=res, load_before=lb,
                          error=res.get("error"))
                log(f"  {scen}: {one_line(scen, res)}")
            except (GuestError, OSError, RuntimeError, TimeoutError, KeyError, ValueError) as e:
                rec.write(rep, name, scen, {"seconds": secs}, "error", error=f"{type(e).__name__}: {e}",
                          load_before=lb)
                log(f"  {scen}: ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    except (Unavailable, GuestError, TimeoutError, RuntimeError, OSError) as e:
        status = "unavailable" if isinstance(e, Unavailable) else "error"
        for scen in wanted:
            rec.write(rep, name, scen, {"seconds": secs}, status, error=f"{type(e).__name__}: {e}",
                      load_before=lb)
        log(f"  {name}: {status}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    finally:
        for g in guests:
            g.quit()
            g.sigkill()
            launch.REGISTRY.discard(g)
        sut.stop()
        if peer_iperf is not None:
            try:
                os.killpg(peer_iperf.pid, 9)
            except OSError:
                pass
            peer_iperf.wait()
            launch.REGISTRY.discard(peer_iperf)
        ctx.tcp_topo.destroy()


def setup(ctx, image):
    ctx.image = image
    ctx.tcp_workdir = WORKDIR
    os.makedirs(WORKDIR, exist_ok=True)
    ctx.tcp_groups = {n: ThreadGroup(f"xvbt-{n}") for n in GROUPS}
    for g in ctx.tcp_groups.values():
        for pid in g.pids():
            log(f"ending leftover pid {pid} from an earlier run (cgroup {g.path})")
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
    TcpTopology.remove_stale()


def teardown(ctx):
    TcpTopology.remove_stale()
    for g in getattr(ctx, "tcp_groups", {}).values():
        g.remove()


def run(ctx, backends, scenarios, reps, secs):
    for rep in range(reps):
        for name in backends:
            if ctx.check_stop:
                ctx.check_stop()
            run_slot(ctx, name, rep, scenarios, secs)


# --- summary ----------------------------------------------------------------------

def _med(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def _by_rep(recs, backend, scen, key):
    out = {}
    for r in recs:
        if r.get("backend") == backend and r.get("scenario") == scen and r.get("status") == "ok":
            v = (r.get("result") or {}).get(key)
            if v is not None:
                out[r["rep"]] = v
    return out


def _ratio(recs, a, b, scen, key):
    """Median over repetitions of a's value / b's value in the same repetition."""
    ra, rb = _by_rep(recs, a, scen, key), _by_rep(recs, b, scen, key)
    vals = [ra[k] / rb[k] for k in ra if k in rb and rb[k]]
    return _med(vals), len(vals)


def _rng(vals, fmt):
    vals = sorted(v for v in vals if v is not None)
    if not vals:
        return "–"
    med = statistics.median(vals)
    return fmt(med) + (f" ({fmt(vals[0])}–{fmt(vals[-1])})" if len(vals) > 1 else "")


TARGETS = {"tcp_vm_to_vm": 1.5, "tcp_guest_to_outside": 1.2, "tcp_outside_to_guest": 1.0}


def table(records):
    recs = [r for r in records if str(r.get("scenario", "")).startswith("tcp_") and r["scenario"] != "tcp_slot"]
    if not recs:
        return []
    present = [b for b in BACKENDS if any(r.get("backend") == b for r in recs)]
    lines = ["| path | scenario | Mbit/s | retransmits | backend CPU ms/Gbit | backend core | guest vCPUs busy |"
             " Mbit/s ÷ tap | CPU/Gbit ÷ tap | n |", "|---|---|---|---|---|---|---|---|---|---|"]
    f0 = lambda v: f"{v:,.0f}"  # noqa: E731
    fp = lambda v: f"{v * 100:.0f}%"  # noqa: E731
    for scen in SCENARIOS:
        for b in present:
            ok = [r for r in recs if r["backend"] == b and r["scenario"] == scen and r["status"] == "ok"]
            bad = [r for r in recs if r["backend"] == b and r["scenario"] == scen and r["status"] != "ok"]
            if not ok and (not bad or all("runs only" in (r.get("error") or "") for r in bad)):
                continue
            if not ok:
                why = (bad[0].get("error") or bad[0]["status"]).splitlines()[0][:90] if bad else "not run"
                lines.append(f"| {b} | {SCEN_TITLES[scen]} | {bad[0]['status'] if bad else '–'}: {why} |"
                             " | | | | | | |")
                continue
            res = [r["result"] for r in ok]
            if b == "tap":
                rt, rc = "1", "1"
            else:
                t, n = _ratio(recs, b, "tap", scen, "mbps")
                c, _ = _ratio(recs, b, "tap", scen, "backend_ms_per_gbit")
                rt = f"{t:.2f}×" if t else "–"
                rc = f"{c:.2f}×" if c else "–"
            lines.append(f"| {b} | {SCEN_TITLES[scen]} | {_rng([x.get('mbps') for x in res], f0)} | "
                         f"{_rng([x.get('retransmits') for x in res], f0)} | "
                         f"{_rng([x.get('backend_ms_per_gbit') for x in res], f0)} | "
                         f"{_rng([x.get('backend_core_fraction') for x in res], fp)} | "
                         f"{_rng([dig(x, 'cpu', 'guest', 'core_fraction') for x in res], fp)} | {rt} | {rc} | "
                         f"{len(ok)}{'' if not bad else f' (+{len(bad)} failed)'} |")
    lines += ["", "| target (xdpvhostd ÷ tap, median of per-repetition ratios) | this run | |",
              "|---|---|---|"]
    for scen in ("tcp_vm_to_vm", "tcp_guest_to_outside", "tcp_outside_to_guest"):
        t, n = _ratio(recs, "xdpvhostd", "tap", scen, "mbps")
        goal = TARGETS[scen]
        extra = ""
        ok = t is not None and t >= goal
        if scen == "tcp_outside_to_guest":
            xr = _med(list(_by_rep(recs, "xdpvhostd", scen, "retransmits").values()))
            tr = _med(list(_by_rep(recs, "tap", scen, "retransmits").values()))
            extra = f", retransmits {xr} vs tap {tr}"
            ok = ok and xr is not None and tr is not None and xr <= tr
        if not n:
            verdict, extra = "not measured", ""
        else:
            verdict = "met" if ok else "not met"
        lines.append(f"| {SCEN_TITLES[scen]} ≥ {goal}×" + (" with retransmits ≤ tap" if scen ==
                                                             "tcp_outside_to_guest" else "")
                     + f" | {f'{t:.2f}×' if t else '–'} (n={n}){extra} | {verdict} |")
    # The daemon's GSO/GRO counters, per scenario (medians over repetitions).
    rows = []
    for scen in SCENARIOS:
        for r in recs:
            if r["backend"] == "xdpvhostd" and r["scenario"] == scen and r["status"] == "ok":
                off = r["result"].get("offload") or {}
                p = off.get("ports", {})
                u = off.get("uplinks", {}).get("up0", {})

                def pc(port, k):
                    return (p.get(port) or {}).get(k, 0)
                drops = {f"{n}:{k}": v for n, c in p.items() for k, v in (c.get("drops") or {}).items()}
                drops.update({f"up0:{k}": v for k, v in (u.get("drops") or {}).items()})
                rows.append(f"| {SCEN_TITLES[scen]} | {r['rep']} | "
                            + " | ".join(f"{pc('vm1', k):,}/{pc('vm2', k):,}" for k in
                                         ("gso_rx", "gso_tx", "gso_segments", "csum_software"))
                            + f" | {u.get('gro_frames', 0):,} | {u.get('gro_segments', 0):,} | "
                            f"{u.get('gso_segments', 0):,} | {u.get('csum_software', 0):,} | "
                            f"{u.get('csum_offloaded', 0):,} | "
                            f"{u.get('rx_ring_full', 0):,} | "
                            f"{json.dumps(drops) if drops else '–'} |")
    if rows:
        lines += ["", "xdpvhostd counters over each run (stats.get deltas; port columns vm1/vm2):", "",
                  "| scenario | rep | gso_rx | gso_tx | gso_segments | csum_software | up0 gro_frames |"
                  " up0 gro_segments | up0 gso_segments | up0 csum_software | up0 csum_offloaded |"
                  " up0 rx_ring_full | drops by reason |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"] + rows
    return lines
