#!/usr/bin/env python3
"""Proves the guest toolkit (build_image.sh, xvtest.guest) against DPDK's
vhost-user backend (dpdk-testpmd with net_vhost ports), a real backend that is
independent of xdpvhost.

Scenarios (all by default; --scenario picks some):
  icmpecho  one guest, QEMU vhost-user client, testpmd server in icmpecho mode:
            NIC comes up, negotiated features, ping answered by testpmd,
            testpmd's port counters saw the frames
  pair      two guests, testpmd io-forwards port0 <-> port1: guest-to-guest
            ping, iperf3 TCP both directions
  server    QEMU as vhost-user server, testpmd as client (KubeVirt's layout)
  mq        two queue pairs (mq=on, -smp 2): pings pinned to each vCPU; both
            queue pairs of testpmd must carry frames
  devopts   mrg_rxbuf=off, event_idx=off, indirect_desc=off: the guest must not
            negotiate them, and 1400-byte pings are still answered
  rxonly    negative control: testpmd drops everything; the guest's ping step
            must fail, later steps must not run, testpmd counts the frames

Prints each scenario's figures and PASS/FAIL, writes WORKDIR/results.json,
exits non-zero when a scenario fails. Nothing leaves the machine: testpmd's
ports are vhost-user sockets only (--no-pci), addresses exist inside guests.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
from xvtest.guest import Guest, GuestError, choose_accel, iperf3_summary, qemu_binary  # noqa: E402
from xvtest.testpmd import eal_args, vhost_vdev  # noqa: E402
from xvtest.testpmd_console import ConsoleError, TestpmdConsole  # noqa: E402
from xvtest.waiting import wait_until  # noqa: E402

WORKDIR = "/tmp/xdpvhost-guest-selftest"
FILE_PREFIX = "guestselftest"
NET = "10.77.0"


def testpmd(workdir: str, sockets: list[str], fwd: str, name: str, queues: int = 1,
            client: bool = False) -> TestpmdConsole:
    """dpdk-testpmd as the vhost-user backend, a net_vhost port per socket
    (testpmd listens, or connects with client), interactive."""
    cmd = eal_args(FILE_PREFIX, "0-1", memory_mb=256)
    for i, sock in enumerate(sockets):
        cmd += ["--vdev", vhost_vdev(sock, i, queues, client)]
    cmd += ["--", "-i", "--total-num-mbufs=16384", f"--forward-mode={fwd}", f"--rxq={queues}",
            f"--txq={queues}"]
    return TestpmdConsole(name, cmd, os.path.join(workdir, f"{name}.log"))


def start_forwarding(pmd: TestpmdConsole) -> TestpmdConsole:
    pmd.start(timeout=60)
    pmd.command("start", timeout=30)
    return pmd


def wait_path(path: str, timeout: float = 60):
    wait_until(lambda: os.path.exists(path), timeout, what=f"{path} to appear")


class Scenario:
    def __init__(self, name: str):
        self.name = name
        self.failures: list[str] = []
        self.figures: dict = {}

    def check(self, ok: bool, what: str) -> bool:
        if not ok:
            self.failures.append(what)
            print(f"  FAIL: {what}", flush=True)
        return ok

    def fig(self, key: str, value):
        self.figures[key] = value
        print(f"  {key}: {value}", flush=True)


def check_guest(s: Scenario, g: Guest, rc: int | None, label: str):
    s.check(rc == 0, f"{label}: guest rc={rc} (console {g.console_log})")
    for e in g.errors():
        s.check(False, f"{label}: {e}")
    nic = g.results("nic")
    if s.check(bool(nic), f"{label}: no nic result"):
        s.check(nic[0]["operstate"] == "up", f"{label}: operstate {nic[0]['operstate']}")
    return nic[0] if nic else {}


def check_ping(s: Scenario, g: Guest, label: str) -> dict:
    pings = g.results("ping")
    if not s.check(bool(pings), f"{label}: no ping result"):
        return {}
    p = pings[-1]
    s.check(p["tx"] > 0 and p["rx"] == p["tx"], f"{label}: ping {p['rx']}/{p['tx']} answered")
    return p


def run_guests(guests: list[Guest], timeout: float) -> list[int | None]:
    rcs: list[int | None] = []
    for g in guests:
        try:
            rcs.append(g.wait_done(timeout))
        except GuestError as e:
            print(f"  {str(e)}", flush=True)
            rcs.append(None)
    return rcs


# --- scenarios -----------------------------------------------------------------
def sc_icmpecho(a, s: Scenario):
    sock = os.path.join(a.workdir, "vhost0.sock")
    pmd = testpmd(a.workdir, [sock], "icmpecho", "testpmd-icmpecho")
    try:
        start_forwarding(pmd)
        wait_path(sock)
        with Guest(a.image, sock, name="g-icmpecho", ip=f"{NET}.2/24", workdir=a.workdir,
                   run=[f"ping,{NET}.1,{a.pings},0.2"],
                   cmd='test "$(cat /sys/class/net/$XV_IF/operstate)" = up') as g:
            g.start()
            rc = run_guests([g], a.timeout)[0]
            nic = check_guest(s, g, rc, "guest")
            s.fig("accel", g.accel)
            s.fig("boot_to_init_s", g.boot_time())
            if nic:
                s.fig("link_wait_s", nic["link_wait_s"])
                s.fig("features", " ".join(nic["feature_names"]))
                s.fig("features_hex", nic["features_hex"])
            p = check_ping(s, g, "guest")
            if p:
                s.fig("rtt_ms_min_avg_max", f"{p['rtt_min_ms']}/{p['rtt_avg_ms']}/{p['rtt_max_ms']}")
        st = pmd.port_stats(0)
        s.fig("testpmd_port0", st)
        s.check(st["rx"] >= a.pings, f"testpmd counted {st['rx']} RX frames, want >= {a.pings}")
        s.check(st["tx"] >= a.pings, f"testpmd sent {st['tx']} replies, want >= {a.pings}")
    finally:
        pmd.stop()


def sc_pair(a, s: Scenario):
    socks = [os.path.join(a.workdir, f"vhost{i}.sock") for i in range(2)]
    pmd = testpmd(a.workdir, socks, "io", "testpmd-pair")
    secs = a.iperf_seconds
    try:
        start_forwarding(pmd)
        for p in socks:
            wait_path(p)
        ga = Guest(a.image, socks[0], name="g-pair-a", ip=f"{NET}.1/24", workdir=a.workdir,
                   run=["iperf3-server,180", "iperf3-server,180"])
        gb = Guest(a.image, socks[1], name="g-pair-b", ip=f"{NET}.2/24", peer=f"{NET}.1",
                   workdir=a.workdir,
                   run=["wait-peer,_,120", f"ping,_,{a.pings},0.2",
                        f"iperf3-client,_,{secs}", f"iperf3-client,_,{secs},-R"])
        with ga, gb:
            ga.start()
            gb.start()
            rcs = run_guests([gb, ga], a.timeout)
            check_guest(s, ga, rcs[1], "guest A")
            check_guest(s, gb, rcs[0], "guest B")
            s.fig("accel", ga.accel)
            s.fig("boot_to_init_s", [ga.boot_time(), gb.boot_time()])
            p = check_ping(s, gb, "B->A")
            if p:
                s.fig("rtt_ms_min_avg_max", f"{p['rtt_min_ms']}/{p['rtt_avg_ms']}/{p['rtt_max_ms']}")
            runs = gb.results("iperf3")
            s.check(len(runs) == 2, f"{len(runs)} iperf3 client results, want 2")
            for r, label in zip(runs, ("B->A", "A->B (-R)")):
                sm = iperf3_summary(r)
                ok = s.check(r.get("rc") == 0 and "error" not in sm and sm.get("received_mbps", 0) > 0,
                             f"iperf3 {label}: {sm}")
                if ok:
                    s.fig(f"tcp_{label.split()[0]}_mbps", sm["received_mbps"])
                    s.fig(f"tcp_{label.split()[0]}_retransmits", sm["retransmits"])
        for port in (0, 1):
            st = pmd.port_stats(port)
            s.fig(f"testpmd_port{port}", st)
            s.check(st["rx"] > a.pings and st["tx"] > a.pings,
                    f"testpmd port {port} forwarded too little: {st}")
    finally:
        pmd.stop()


def sc_server(a, s: Scenario):
    sock = os.path.join(a.workdir, "qemu-server.sock")
    pmd = testpmd(a.workdir, [sock], "icmpecho", "testpmd-server", client=True)
    with Guest(a.image, sock, name="g-server", server=True, ip=f"{NET}.2/24", workdir=a.workdir,
               run=[f"ping,{NET}.1,{a.pings},0.2"]) as g:
        try:
            g.start()
            g.wait_socket(60)
            start_forwarding(pmd)
            rc = run_guests([g], a.timeout)[0]
            check_guest(s, g, rc, "guest")
            s.fig("boot_to_init_s", g.boot_time())
            p = check_ping(s, g, "guest")
            if p:
                s.fig("rtt_ms_min_avg_max", f"{p['rtt_min_ms']}/{p['rtt_avg_ms']}/{p['rtt_max_ms']}")
            st = pmd.port_stats(0)
            s.fig("testpmd_port0", st)
            s.check(st["rx"] >= a.pings, f"testpmd counted {st} RX frames")
        finally:
            pmd.stop()


def sc_mq(a, s: Scenario):
    sock = os.path.join(a.workdir, "vhost-mq.sock")
    pmd = testpmd(a.workdir, [sock], "icmpecho", "testpmd-mq", queues=2)
    n = a.pings
    try:
        start_forwarding(pmd)
        wait_path(sock)
        cmd = (f"ethtool -l $XV_IF; grep -E 'virtio|CPU' /proc/interrupts; "
               f"taskset -c 0 xv ping {NET}.1 {n} 0.2 && taskset -c 1 xv ping {NET}.1 {n} 0.2")
        with Guest(a.image, sock, name="g-mq", ip=f"{NET}.2/24", workdir=a.workdir,
                   netdev_queues=2, smp=2, cmd=cmd) as g:
            g.start()
            rc = run_guests([g], a.timeout)[0]
            nic = check_guest(s, g, rc, "guest")
            s.fig("device", "mq=on,vectors=%s -smp 2" % ("0" if g.accel == "tcg" else "default"))
            if nic:
                s.fig("rx_queues", nic["rx_queues"])
                s.check(nic["rx_queues"] == 2, f"guest has {nic['rx_queues']} rx queues, want 2")
                s.check("MQ" in nic["feature_names"], "MQ not negotiated")
            pings = g.results("ping")
            s.check(len(pings) == 2 and all(p["rx"] == p["tx"] == n for p in pings),
                    f"pinned pings: {[(p['tx'], p['rx']) for p in pings]}")
        st = pmd.fwd_stream_stats()
        s.fig("testpmd_queue_packets", {f"port{p}/q{q}": v for (p, q), v in st.items()})
        for i in (0, 1):
            rx = st.get((0, i), {}).get("rx", 0)
            s.check(rx >= n, f"testpmd RX queue {i} got {rx} frames, want >= {n}")
    finally:
        pmd.stop()


def sc_devopts(a, s: Scenario):
    sock = os.path.join(a.workdir, "vhost-devopts.sock")
    pmd = testpmd(a.workdir, [sock], "icmpecho", "testpmd-devopts")
    off = ("MRG_RXBUF", "RING_EVENT_IDX", "RING_INDIRECT_DESC")
    try:
        start_forwarding(pmd)
        wait_path(sock)
        with Guest(a.image, sock, name="g-devopts", ip=f"{NET}.2/24", workdir=a.workdir,
                   mrg_rxbuf=False, event_idx=False, indirect_desc=False,
                   run=[f"ping,{NET}.1,{a.pings},0.2,1400"]) as g:
            g.start()
            rc = run_guests([g], a.timeout)[0]
            nic = check_guest(s, g, rc, "guest")
            if nic:
                s.fig("features", " ".join(nic["feature_names"]))
                for f in off:
                    s.check(f not in nic["feature_names"], f"{f} negotiated although off")
            check_ping(s, g, "guest")
    finally:
        pmd.stop()


def sc_rxonly(a, s: Scenario):
    """Negative control: testpmd swallows everything, so the guest's ping step
    must fail (and the toolkit must say so) while testpmd counts the frames."""
    sock = os.path.join(a.workdir, "vhost-rxonly.sock")
    pmd = testpmd(a.workdir, [sock], "rxonly", "testpmd-rxonly")
    n = 3
    try:
        start_forwarding(pmd)
        wait_path(sock)
        with Guest(a.image, sock, name="g-rxonly", ip=f"{NET}.2/24", workdir=a.workdir,
                   neigh=[f"{NET}.1@02:00:00:00:00:01"],
                   run=[f"ping,{NET}.1,{n},0.2", "nic"]) as g:
            g.start()
            rc = run_guests([g], a.timeout)[0]
            s.fig("guest_rc", rc)
            s.check(rc not in (0, None), f"guest rc={rc}, want a failure")
            pings = g.results("ping")
            s.check(len(pings) == 1 and pings[0]["rx"] == 0 and pings[0]["rc"] != 0,
                    f"ping result {pings}")
            s.check(not g.results("nic")[1:], "steps after the failed one ran")
        st = pmd.port_stats(0)
        s.fig("testpmd_port0", st)
        s.check(st["rx"] >= n and st["tx"] == 0,
                f"testpmd counters {st}")
    finally:
        pmd.stop()


SCENARIOS = {"icmpecho": sc_icmpecho, "pair": sc_pair, "server": sc_server, "mq": sc_mq,
             "devopts": sc_devopts, "rxonly": sc_rxonly}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--image", required=True, help="directory made by build_image.sh")
    p.add_argument("--build", action="store_true", help="run build_image.sh --image first")
    p.add_argument("--workdir", default=WORKDIR)
    p.add_argument("--scenario", action="append", choices=sorted(SCENARIOS),
                   help="run only these (repeatable)")
    p.add_argument("--pings", type=int, default=10)
    p.add_argument("--iperf-seconds", type=int, default=5)
    p.add_argument("--timeout", type=float, default=300, help="per guest, seconds to XV-DONE")
    a = p.parse_args()
    a.image = os.path.abspath(a.image)
    os.makedirs(a.workdir, exist_ok=True)
    lock = open(os.path.join(a.workdir, ".lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)   # one selftest at a time on this machine
    for f in os.listdir(a.workdir):
        if f.endswith((".sock", ".log", ".qmp")) or f == "results.json":
            os.unlink(os.path.join(a.workdir, f))
    if a.build:
        subprocess.run([os.path.join(HERE, "build_image.sh"), a.image], check=True)
    for tool in ("dpdk-testpmd", qemu_binary()):
        if not shutil.which(tool):
            print(f"selftest_dpdk: {tool} not found (scripts/bootstrap.sh)", file=sys.stderr)
            return 1
    accel, reason = choose_accel(a.image)
    print(f"selftest_dpdk: accel={accel} ({reason})", flush=True)

    report = {"accel": accel, "accel_reason": reason, "scenarios": {}}
    failed = []
    for name in a.scenario or list(SCENARIOS):
        s = Scenario(name)
        print(f"=== {name}", flush=True)
        t0 = time.monotonic()
        try:
            SCENARIOS[name](a, s)
        except (GuestError, ConsoleError, OSError) as e:
            s.check(False, f"exception: {e}")
        s.fig("wall_s", round(time.monotonic() - t0, 1))
        ok = not s.failures
        print(f"--- {name}: {'PASS' if ok else 'FAIL'}", flush=True)
        report["scenarios"][name] = {"pass": ok, "failures": s.failures, "figures": s.figures}
        if not ok:
            failed.append(name)
    with open(os.path.join(a.workdir, "results.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(f"selftest_dpdk: {'FAIL ' + ','.join(failed) if failed else 'PASS'} "
          f"(details {a.workdir}/results.json, logs in {a.workdir})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
