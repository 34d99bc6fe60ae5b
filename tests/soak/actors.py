"""The soak's actors. Each does one kind of churn, in steps, while the others
do theirs, and can bring the node back to the baseline (settle) for a
checkpoint. Every choice an actor makes comes from its own random.Random,
seeded from the run's seed, so a run's sequence of actions is replayed by
its seed (their timing, on a loaded machine, is not).

An actor's step raises only on what is wrong with the daemon; a control
call that fails while the Restarter has the daemon down is waited for
(Soak.call), not reported."""

import os
import random
import signal
import socket
import subprocess
import time

from xvtest import prom
from xvtest.control import Control, RpcError
from xvtest.guest import Guest, GuestError, GuestTimeout
from xvtest.testpmd import Testpmd, taken_mismatch

import soak_lab as L


class Actor:
    name = "actor"

    def __init__(self, soak, index):
        self.soak = soak
        self.rng = random.Random(f"{soak.seed}/{self.name}/{index}")
        self.counts = {}

    def count(self, what, n=1):
        self.counts[what] = self.counts.get(what, 0) + n

    def event(self, text):
        self.soak.event(self.name, text)

    def run(self, stop):
        """Steps until stop is set (the end of the epoch's churn phase)."""
        while not stop.is_set():
            self.step(stop)

    def step(self, stop):
        raise NotImplementedError

    def settle(self):
        """Back to the baseline: nothing of this actor's left running."""


# ---- guests ---------------------------------------------------------------------
class TestpmdGuests(Actor):
    """DPDK virtio_user guest lifetimes on g0 (the daemon listens) and g1 (the
    daemon connects; testpmd listens, server=1): 1 or 2 queue pairs, a
    forwarding mode, a few seconds of traffic, then SIGINT or SIGKILL. A
    lifetime ended by SIGINT with no daemon restart in it is accounted: the
    frames testpmd counted as sent are what the daemon took from it, but
    for what was still on the rings."""
    name = "testpmd"
    MODES = ("txonly", "rxonly", "macswap", "io")  # io sends the peer's frames back: spoofed

    def __init__(self, soak, index):
        super().__init__(soak, index)
        self.guest = None
        self.lifetimes = []

    def step(self, stop):
        port = self.rng.choice(("g0", "g1"))
        queues = self.rng.choice((1, 2))
        mode = self.rng.choice(self.MODES)
        lifetime = self.rng.uniform(2, 8)
        crash = self.rng.random() < 0.3
        sock = self.soak.lab.socket_path(port)
        server = L.GUEST_PORTS[port][0] == "client"
        if server and os.path.exists(sock):
            os.unlink(sock)  # a SIGKILLed testpmd leaves its listening socket file
        generation = self.soak.generation
        before = self.soak.taken_from(port)
        self.guest = Testpmd(f"soak-{port}", sock, L.GUEST_PORTS[port][1], mode, self.soak.workdir,
                             peer=L.PEER_MAC, server=server, queue_size=256,
                             vdev_extra=f"queues={queues}",
                             extra=(f"--rxq={queues}", f"--txq={queues}"),
                             file_prefix=f"xvsoak-{os.getpid()}-{port}")
        self.event(f"{port}: testpmd {mode}, {queues} pair(s), {lifetime:.1f} s, "
                   f"{'SIGKILL' if crash else 'SIGINT'}")
        self.guest.start()
        try:
            self.guest.wait_forwarding(timeout=90)
        except (RuntimeError, TimeoutError) as e:
            if self.soak.generation == generation and not self.soak.restarting.is_set():
                raise RuntimeError(f"{port}: testpmd did not start: {e}") from None
            self.count("starts_lost_to_restart")
            self.guest.kill()
            return
        self.count("lifetimes")
        stop.wait(lifetime)
        if crash:
            self.guest.kill()
            self.count("sigkill")
            return
        stats = self.guest.stop()
        self.count("sigint")
        after = self.soak.taken_from(port)
        if self.soak.generation != generation or before is None or after is None:
            return  # the daemon restarted in between: its counters began again
        sent = stats["tx"]
        mismatch = taken_mismatch(sent, after - before, queue_size=256 * queues)
        self.lifetimes.append({"port": port, "mode": mode, "queues": queues, "sent": sent,
                               "taken": after - before, "mismatch": mismatch})
        if mismatch:
            self.soak.fail(f"{port}: {mismatch}")

    def settle(self):
        if self.guest:
            self.guest.kill()
            self.guest = None


class QemuGuests(Actor):
    """QEMU guest lifetimes on q0 (2 queue pairs, QEMU reconnects every second):
    boot, ping the peer, `ethtool -L eth0 combined 1`, ping, back to 2, ping,
    then SIGTERM (QEMU quits) or SIGKILL (a crash). IPv6 is off in the guest
    and its neighbour is static: it sends only unicast.

    Most lifetimes also restart their rings as a migration does: QMP `stop`
    (QEMU takes every ring back with GET_VRING_BASE, as a migration's source
    does when it stops the VM), then `cont` (QEMU sets the rings up again
    from those bases, as after a cancelled migration or on its destination),
    at a random moment of the guest's traffic and queue changes. The daemon
    must show the rings stopped, then running again."""
    name = "qemu"
    SCRIPT = r"""
ping -c 20 -i 0.2 -W 2 $XV_PEER >/dev/null; ethtool -L $XV_IF combined 1
ping -c 20 -i 0.2 -W 2 $XV_PEER >/dev/null; ethtool -L $XV_IF combined 2
n=$(ping -c 20 -i 0.2 -W 2 $XV_PEER | sed -n 's/.* \([0-9]*\) packets received.*/\1/p')
xv result "\"kind\":\"soak-ping\",\"received\":${n:-0}"
xv serve
"""

    def __init__(self, soak, index):
        super().__init__(soak, index)
        self.guest = None
        self.replies = []

    def step(self, stop):
        if not self.soak.guest_image:
            stop.wait()
            return
        crash = self.rng.random() < 0.4
        self.guest = Guest(self.soak.guest_image, self.soak.lab.socket_path("q0"), name="soak-q0",
                           reconnect=1, mac=L.GUEST_PORTS["q0"][1], ip=f"{L.GUEST_IP}/24",
                           peer=L.PEER_IP, neigh=[f"{L.PEER_IP}@{L.PEER_MAC}"],
                           netdev_queues=2, kernel_args=["ipv6.disable=1"],
                           cmd=self.SCRIPT, workdir=self.soak.workdir, quiet=True)
        restart_rings = self.rng.random() < 0.7
        restart_after = self.rng.uniform(0, 8)  # s after the guest booted
        self.event(f"q0: QEMU guest, {'SIGKILL' if crash else 'SIGTERM'} at the end"
                   f"{f', rings restarted {restart_after:.1f} s after boot' if restart_rings else ''}")
        try:
            self.guest.start()
            deadline = time.monotonic() + 150
            restart_at = None
            while not stop.is_set() and time.monotonic() < deadline:
                if restart_rings and restart_at is None:
                    try:
                        self.guest.wait_booted(timeout=1)
                    except GuestTimeout:
                        continue
                    restart_at = time.monotonic() + restart_after
                if restart_rings and time.monotonic() >= restart_at:
                    restart_rings = False
                    self.restart_rings(stop)
                try:
                    result = self.guest.wait_result("soak-ping", timeout=1)
                except GuestTimeout:
                    continue
                self.replies.append(int(result.get("received") or 0))
                self.count("lifetimes")
                break
            else:
                self.count("cut_by_epoch_end")
        except GuestError as e:  # GuestExited among them
            self.count("incomplete")
            self.event(f"q0: lifetime incomplete: {str(e).splitlines()[0]}")
        stop.wait(self.rng.uniform(0, 3))
        if crash:
            self.guest.sigkill()
            self.count("sigkill")
        else:
            self.guest.kill()
            self.count("sigterm")
        self.guest = None

    def restart_rings(self, stop):
        """QMP stop, a pause, QMP cont; the daemon must see q0's rings stop
        and run again. Not judged when a daemon restart overlaps it (the
        port then reconnects instead)."""
        generation = self.soak.generation
        self.guest.qmp("stop")
        stopped = self.wait_port_state(("connected",), 10)
        stop.wait(self.rng.uniform(0.2, 2))
        self.guest.qmp("cont")
        running = self.wait_port_state(("running",), 30)
        if self.soak.generation != generation or self.soak.restarting.is_set():
            self.count("ring_restarts_overlapping_a_daemon_restart")
            return
        if not stopped or not running:
            raise AssertionError(f"q0's rings restarted by QMP stop/cont: stopped seen {stopped}, "
                                 f"running again {running}")
        self.count("ring_restarts")

    def wait_port_state(self, states, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ports = {p["name"]: p["state"] for p in self.soak.call("port.list")}
            if ports.get("q0") in states:
                return True
            time.sleep(0.05)
        return False

    def settle(self):
        if self.guest:
            self.guest.sigkill()
            self.guest = None


# ---- ports ------------------------------------------------------------------------
class PortChurn(Actor):
    """Ports added and removed over the control socket, up to 64 at once:
    server and client mode (the client ones reconnect to a socket nobody
    serves), some with a frontend that connects and hangs up."""
    name = "ports"
    PEAK = 64

    def __init__(self, soak, index):
        super().__init__(soak, index)
        self.present = set()

    @staticmethod
    def mac(i):
        return f"52:54:00:5b:{i // 256:02x}:{i % 256:02x}"

    def step(self, stop):
        # Below the peak 3 in 5 steps add a port: the count climbs to 64 and
        # churns near it; settle() removes them all for the checkpoint.
        filling = self.rng.random() < (0.75 if len(self.present) < self.PEAK else 0.0)
        if self.present and (not filling or self.rng.random() < 0.2):
            name = self.rng.choice(sorted(self.present))
            self.soak.change("port.remove", name=name)
            self.present.discard(name)
            self.count("removed")
        else:
            free = [i for i in range(self.PEAK) if f"churn-{i:02d}" not in self.present]
            i = self.rng.choice(free)
            name = f"churn-{i:02d}"
            mode = "client" if self.rng.random() < 0.25 else "server"
            path = self.soak.lab.socket_path(name)
            self.soak.change("port.add", name=name, socket=path, mac=self.mac(i), mode=mode)
            self.present.add(name)
            self.count(f"added_{mode}")
            if mode == "server" and self.rng.random() < 0.2:
                with socket.socket(socket.AF_UNIX) as s:
                    try:
                        s.connect(path)
                        self.count("frontend_hangups")
                    except OSError:
                        pass
            if len(self.present) == self.PEAK:
                self.count("peaks")
                self.event(f"{self.PEAK} churn ports")
        stop.wait(self.rng.uniform(0.01, 0.08))

    def settle(self):
        self.soak.remove_ports("churn-")
        self.present.clear()


# ---- a second uplink, added and removed -------------------------------------------
class UplinkChurn(Actor):
    """A second uplink, up1 on xvsoak-n1, added over the control socket with
    up to 3 ports on it, held a few seconds, then removed; sometimes the
    removal is asked while ports still name it, which must be refused
    (-32008) and leave it serving. Each addition attaches an XDP program,
    binds an AF_XDP socket and maps its UMEM; each removal must give every
    one of them back (the checkpoints count them)."""
    name = "uplinks"
    IN_USE = -32008

    def __init__(self, soak, index):
        super().__init__(soak, index)
        self.ports = []

    def step(self, stop):
        self.remove_all()  # what a restart from the state file brought back
        self.soak.change("uplink.add", name="up1", interface=L.NODE_IF1, queues=[0], bind="copy")
        self.count("added")
        for i in range(self.rng.randrange(4)):
            name = f"u1-{i}"
            self.soak.change("port.add", name=name, socket=self.soak.lab.socket_path(name),
                             mac=f"52:54:00:5c:00:{i:02x}", uplink="up1")
            self.ports.append(name)
        stop.wait(self.rng.uniform(0.5, 4))
        if self.ports and self.rng.random() < 0.3:
            try:
                self.soak.call("uplink.remove", name="up1")
                raise AssertionError(f"uplink.remove of up1 accepted while {self.ports} use it")
            except RpcError as e:
                if e.code != self.IN_USE:
                    raise
                self.count("refused_in_use")
            if [u["name"] for u in self.soak.call("uplink.list")].count("up1") != 1:
                raise AssertionError("up1 gone after its removal was refused")
        self.remove_all()
        self.count("removed")
        stop.wait(self.rng.uniform(0.2, 2))

    def remove_all(self):
        self.soak.remove_ports("u1-")
        self.ports.clear()
        if any(u["name"] == "up1" for u in self.soak.call("uplink.list")):
            self.soak.change("uplink.remove", name="up1")

    def settle(self):
        self.remove_all()


# ---- the uplink ---------------------------------------------------------------------
class UplinkFaults(Actor):
    """What happens to a NIC under a daemon: its link goes down and up (either
    end), its MTU changes, someone else removes the XDP program, the
    interface is deleted and created again, its channel count changes."""
    name = "uplink"

    def step(self, stop):
        lab = self.soak.lab
        fault = self.rng.choice(("flap_node", "flap_peer", "mtu", "xdp_off", "recreate",
                                 "channels"))
        try:
            if fault == "flap_node":
                lab.in_node("ip", "link", "set", L.NODE_IF, "down")
                stop.wait(self.rng.uniform(0.05, 1.5))
                lab.in_node("ip", "link", "set", L.NODE_IF, "up")
            elif fault == "flap_peer":
                lab.set_peer_link(up=False)
                stop.wait(self.rng.uniform(0.05, 1.5))
                lab.set_peer_link(up=True)
            elif fault == "mtu":
                mtu = self.rng.choice((1280, 1500, 3000, 4000))
                lab.in_node("ip", "link", "set", L.NODE_IF, "mtu", str(mtu))
                lab.in_peer("ip", "link", "set", L.PEER_IF, "mtu", str(mtu))
                fault += f" {mtu}"
            elif fault == "xdp_off":
                lab.in_node("ip", "link", "set", "dev", L.NODE_IF, "xdp", "off", check=False)
                lab.in_node("ip", "link", "set", "dev", L.NODE_IF, "xdpgeneric", "off", check=False)
            elif fault == "recreate":
                lab.delete_veth()
                stop.wait(self.rng.uniform(0.1, 2))
                lab.create_veth()
            else:
                n = self.rng.choice((1, 2))
                lab.in_node("ethtool", "-L", L.NODE_IF, "rx", str(n), "tx", str(n))
                fault += f" {n}"
        except RuntimeError as e:
            # The veth is mid-recreate from an earlier step, say: the fault is
            # not applied, nothing about the daemon is wrong.
            self.count("not_applied")
            self.event(f"{fault}: not applied: {str(e)[:200]}")
            return
        self.count(fault.split()[0])
        self.event(fault)
        stop.wait(self.rng.uniform(1, 5))

    def settle(self):
        self.soak.lab.restore_veth()


# ---- control and metrics -------------------------------------------------------------
class ControlLoad(Actor):
    """A control client: read-only methods on one connection or a new one,
    and malformed requests that must get a JSON-RPC error back."""
    name = "control"
    METHODS = ("status", "stats.get", "port.list", "uplink.list", "tunables.get", "config.get",
               "health", "version")
    MALFORMED = (b"{not json", b'{"jsonrpc":"2.0","id":7,"method":"no.such.method"}',
                 b'{"jsonrpc":"2.0","id":8,"method":"port.get","params":{"name":5}}',
                 b'{"jsonrpc":"2.0","id":9,"method":"port.get","params":{"name":"nope"}}',
                 b'[1,2,3]')

    def step(self, stop):
        try:
            with Control(self.soak.daemon.control_path, timeout=10) as c:
                for _ in range(self.rng.randint(1, 40)):
                    if self.rng.random() < 0.15:
                        reply = c.raw(self.rng.choice(self.MALFORMED))
                        if "error" not in reply or "code" not in reply["error"]:
                            self.soak.fail(f"malformed request answered without an error: {reply}")
                        self.count("malformed")
                    else:
                        c.call(self.rng.choice(self.METHODS))
                        self.count("calls")
                    if stop.wait(self.rng.uniform(0, 0.05)):
                        break
        except (OSError, ValueError) as e:
            if not self.soak.restarting.is_set():
                self.soak.fail(f"control connection failed: {e!r}")
            self.count("lost_to_restart")
            stop.wait(0.5)
        except RpcError as e:
            self.soak.fail(f"a read-only call failed: {e}")


class Scraper(Actor):
    """Prometheus: a scrape every second, parsed with a strict parser."""
    name = "scrape"

    def step(self, stop):
        p = self.soak.lab.scrape()
        if p.returncode == 0:
            try:
                families = prom.parse(p.stdout)
                self.count("scrapes")
                self.count("series", sum(len(f["samples"]) for f in families.values()))
            except prom.ParseError as e:
                self.soak.fail(f"scrape does not parse: {e}")
        elif self.soak.restarting.is_set():
            self.count("lost_to_restart")
        else:
            self.soak.fail(f"scrape failed: curl rc {p.returncode} {p.stderr.strip()[:200]}")
        stop.wait(1.0)


# ---- restarts -------------------------------------------------------------------------
class Restarter(Actor):
    """A SIGHUP reload with a changed tunable in every epoch, and in every
    `kill_every`-th epoch a SIGKILL and a start from the state file."""
    name = "restart"

    def __init__(self, soak, index):
        super().__init__(soak, index)
        self.reloads = 0

    def run(self, stop):
        epoch = self.soak.epoch
        kill = self.soak.kill_every and epoch % self.soak.kill_every == self.soak.kill_every - 1
        moments = sorted(self.rng.uniform(0.1, 0.8) * self.soak.churn_s for _ in range(2))
        start = time.monotonic()
        if stop.wait(max(0.0, moments[0] - (time.monotonic() - start))):
            return
        self.reload()
        if kill and not stop.wait(max(0.0, moments[1] - (time.monotonic() - start))):
            self.kill_and_start()
        stop.wait()

    def reload(self):
        self.reloads += 1
        value = 100 + self.reloads % 7 * 50

        def change(config):
            config.setdefault("tunables", {})["flood_rate"] = value
        self.soak.lab.rewrite_config(change)
        os.kill(self.soak.daemon.pid, signal.SIGHUP)
        self.soak.wait(lambda: self.soak.call("tunables.get")["tunables"]["flood_rate"] == value,
                       what=f"flood_rate {value} after SIGHUP")
        self.count("sighup")
        self.event(f"SIGHUP: flood_rate {value}")

    def kill_and_start(self):
        self.soak.restarting.set()
        try:
            self.soak.daemon.kill()
            self.soak.generation += 1
            self.event("SIGKILL")
            time.sleep(self.rng.uniform(0, 1))
            self.soak.start_daemon()
            self.event("started again from the state file")
            self.count("sigkill_restarts")
        finally:
            self.soak.restarting.clear()


class PeerTraffic(Actor):
    """The outside: paced unicast UDP from the peer to g0, g1 and q0, from a
    process in the peer namespace that rebinds when its interface is
    recreated. Started for the churn phase, stopped for the checkpoint."""
    name = "peer"
    SENDER = r"""
import socket, struct, sys, time
ifname, rate = sys.argv[1], float(sys.argv[2])
src = bytes.fromhex(sys.argv[3].replace(':', ''))
dsts = [bytes.fromhex(m.replace(':', '')) for m in sys.argv[4:]]
payload = bytes(range(64))
udp = struct.pack('!HHHH', 1024, 9, 8 + len(payload), 0) + payload
def csum(b):
    t = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while t >> 16: t = (t & 0xffff) + (t >> 16)
    return ~t & 0xffff
ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                 bytes([10, 79, 0, 1]), bytes([10, 79, 0, 200]))
ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
frames = [d + src + b'\x08\x00' + ip + udp for d in dsts]
s, i, t = None, 0, time.monotonic()
while True:
    try:
        if s is None:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind((ifname, 0))
        s.send(frames[i % len(frames)])
    except OSError:  # the interface went down or was deleted: bind again
        s = None; time.sleep(0.05)
    i += 1
    t += 1.0 / rate
    d = t - time.monotonic()
    if d > 0: time.sleep(d)
"""

    def __init__(self, soak, index):
        super().__init__(soak, index)
        self.proc = None

    def run(self, stop):
        macs = [L.GUEST_PORTS[p][1] for p in ("g0", "g1", "q0")]
        self.proc = subprocess.Popen(["ip", "netns", "exec", self.soak.lab.peer, "python3", "-c",
                                      self.SENDER, L.PEER_IF, "2000", L.PEER_MAC, *macs],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stop.wait()

    def settle(self):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.communicate(timeout=10)
            self.proc = None
            self.count("bursts")


ALL = (PeerTraffic, TestpmdGuests, QemuGuests, PortChurn, UplinkChurn, UplinkFaults, ControlLoad,
       ControlLoad, Scraper, Restarter)
