"""Queue pairs per vCPU, with a real guest behind the AF_XDP uplink.

mq-uplink  A KubeVirt-style multiqueue guest: 4 vCPUs, `-netdev
           vhost-user,queues=4`, `virtio-net-pci,mq=on,vectors=10` (under
           KVM; under TCG QEMU 7.2 segfaults at DRIVER_OK with vhost-user and
           MSI-X, so the harness gives vectors=0 there: INTx), port
           "queues": 4 on a daemon with 2 service threads (pairs 0 and 2 on
           one, 1 and 3 on the other). Namespaces mq-node (the daemon, uplink
           veth mqup0) and mq-peer (mqpr0, 10.78.1.100/24).
           1. TCP (iperf3 -P 8) and UDP (-u -P 4) flows from the peer to the
              guest: the daemon's per-queue counters (stats.get queue_pairs)
              show frames delivered on several pairs, and the guest's own
              per-queue counters (ethtool -S) agree that several RX queues
              carried them.
           2. A TCP stream from the peer runs while the guest does
              `ethtool -L eth0 combined 1` (QEMU then disables pairs 1..3 with
              SET_VRING_ENABLE 0): the stream completes with data in every
              second after the change, the pairs 1..3 receive nothing from
              then on, pair 0 everything, port.get shows vrings 2..7
              disabled, and the port stays running.
mq-limit   A guest whose QEMU asks for 4 pairs from a port configured for 2:
           QEMU reports "you are asking more queues than supported: 2" (the
           daemon answered VHOST_USER_GET_QUEUE_NUM with 2) and does not
           start the guest (QEMU 7.2 retries the netdev in a loop), the port
           never runs a ring, and the daemon keeps serving.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from e2e_context import Context, mac, port
from guest_checks import check_alive, check_clean_stop, wait_done, wait_result
from scenario_devices import QSTATS_CMD
from scenario_result import Pending, ScenarioResult
from xvtest import netns
from xvtest.daemon import DaemonExited
from xvtest.guest import GuestError

NODE_NS = "mq-node"
PEER_NS = "mq-peer"
UPLINK_IF = "mqup0"
PEER_IF = "mqpr0"
PEER_IP = "10.78.1.100"
GUEST_IP = "10.78.1.2"
PAIRS = 4
GO_PORT = 7000        # the peer connects here to tell the guest to run ethtool -L
STREAM_SECS = 14      # the stream of phase 2
SWITCH_AFTER = 5      # seconds into it the guest goes to one pair


def _in_peer(*cmd: str, check: bool = True, timeout: float = 60):
    return netns.run_in(PEER_NS, *cmd, check=check, timeout=timeout)


def _topology(ctx: Context):
    for ns in (NODE_NS, PEER_NS):
        netns.delete(ns)  # left by a killed run
        ctx.register_netns(ns)
        netns.create(ns, ipv6=True)
    netns.veth(NODE_NS, UPLINK_IF, PEER_NS, PEER_IF)
    netns.run("ip", "-n", PEER_NS, "addr", "add", f"{PEER_IP}/24", "dev", PEER_IF)
    # Complete checksums, as a real NIC delivers them (DESIGN.md).
    _in_peer("ethtool", "-K", PEER_IF, "tx", "off", "rx", "off")


def node_with_port(ctx: Context, r: ScenarioResult, name: str, socket_name: str, mac_id: int,
                   queues: int):
    """The namespaces and a daemon with 2 service threads serving one port
    `name` ("queues": `queues`, behind the uplink): (work dir, its socket,
    the daemon). Pending without root."""
    if os.geteuid() != 0:
        raise Pending("needs root (network namespaces)")
    wd = ctx.scenario_dir(r.name)
    _topology(ctx)
    sock = os.path.join(wd, socket_name)
    d = _start_daemon(ctx, wd, [port(name, sock, "server", mac(mac_id), uplink="up0",
                                     queues=queues)])
    return wd, sock, d


def _start_daemon(ctx: Context, wd: str, ports: list[dict]):
    d = ctx.daemon(wd, ports, uplinks=[{"name": "up0", "interface": UPLINK_IF, "queues": [0]}],
                   netns=NODE_NS, extra={"threads": {"count": 2}})
    try:
        d.start()
    except (DaemonExited, TimeoutError):
        raise RuntimeError(f"xdpvhostd did not start (rc={d.returncode}): "
                           + d.log_text(this_run=True)[-400:]) from None
    return d


def _pairs(d, name: str) -> list[dict]:
    return d.call("stats.get", port=name)["ports"][name]["queue_pairs"]


def _iperf(wd: str, tag: str, *args: str, timeout: float) -> dict | None:
    """iperf3 client in the peer towards the guest; its JSON, or None. The
    guest's server takes a moment between tests: refused connections are
    tried again."""
    res = None
    for _ in range(15):
        p = _in_peer("iperf3", "-c", GUEST_IP, "-J", *args, check=False, timeout=timeout)
        with open(os.path.join(wd, f"peer-iperf3-{tag}.json"), "w") as f:
            f.write(p.stdout)
        try:
            res = json.loads(p.stdout)
        except ValueError:
            res = None
        error = (res or {}).get("error", "")
        if "unable to connect" not in error and "Connection refused" not in error:
            break
        time.sleep(1)
    return res


def _iperf_ok(res: dict | None) -> tuple[bool, str]:
    if not res:
        return False, "no JSON from iperf3"
    if res.get("error"):
        return False, res["error"]
    end = res.get("end", {})
    s = end.get("sum_received") or end.get("sum") or {}
    return s.get("bytes", 0) > 0, f"{s.get('bits_per_second', 0) / 1e6:.1f} Mbit/s, {s.get('bytes', 0)} bytes"


def run_mq_uplink(ctx: Context, r: ScenarioResult):
    wd, s1, d = node_with_port(ctx, r, "vm1", "mq-vm1.sock", 0x41, PAIRS)
    ctx.background(["ip", "netns", "exec", PEER_NS, "tcpdump", "-i", PEER_IF, "-nn", "-c", "50"],
                   os.path.join(wd, "peer-tcpdump.log"))
    # The guest serves iperf3, reports its per-queue counters when told, goes
    # to one pair when told, and reports again at the end.
    go = f"nc -l -p {GO_PORT} > /dev/null"
    cmd = (f"xv wait-peer _ 90 || exit 1; iperf3 -s -D; echo 'XV-READY iperf3 t=0'; "
           f"{go}; {QSTATS_CMD}; {go}; ethtool -L $XV_IF combined 1; rc=$?; "
           + r'xv result "\"kind\":\"combined\",\"rc\":$rc"; '
           + f"{go}; {QSTATS_CMD}; exit $rc")
    g = ctx.guest(wd, s1, "vm1", mac=mac(0x41), ip=f"{GUEST_IP}/24", peer=PEER_IP, reconnect=1,
                  netdev_queues=PAIRS, smp=PAIRS, queues=PAIRS, cmd=cmd)
    g.start()

    def tell_guest():
        # A TCP connection to the guest's busybox nc -l, which returns once
        # it closes.
        connect = ("import socket,sys; "
                   f"socket.create_connection(('{GUEST_IP}', {GO_PORT}), 3).close()")
        for _ in range(30):
            if _in_peer(sys.executable, "-c", connect, check=False, timeout=10).returncode == 0:
                return
            time.sleep(0.5)
        raise RuntimeError("the guest does not listen for the go signal")

    try:
        wait_result(g, "wait-peer", d, 180)
        g.wait_for(r"XV-READY iperf3", 30)
        nic = g.results("nic")
        r.check("guest negotiated MQ and has 4 RX queues",
                bool(nic) and "MQ" in nic[-1].get("feature_names", [])
                and nic[-1].get("rx_queues") == PAIRS,
                f"{nic[-1].get('rx_queues') if nic else None} RX queues")
        detail = d.call("port.get", name="vm1")
        enabled = sorted(q["index"] for q in detail.get("queues", []) if q.get("state") == "enabled")
        r.check("daemon: all 8 vrings enabled", enabled == list(range(2 * PAIRS)), f"{enabled}")

        # Phase 1: several flows from outside land on several pairs.
        before = _pairs(d, "vm1")
        threads = sorted({p["thread"] for p in before})
        r.check("pairs are polled by both service threads", threads == [0, 1],
                f"pair -> thread {[(p['pair'], p['thread']) for p in before]}")
        tcp = _iperf(wd, "tcp", "-t", "4", "-P", "8", timeout=60)
        ok, what = _iperf_ok(tcp)
        r.check("TCP peer -> guest, 8 streams", ok, what)
        udp = _iperf(wd, "udp", "-t", "3", "-u", "-b", "5M", "-P", "4", "-l", "1200", timeout=60)
        ok, what = _iperf_ok(udp)
        r.check("UDP peer -> guest, 4 streams", ok, what)
        after = _pairs(d, "vm1")
        delivered = [a["tx_packets"] - b["tx_packets"] for a, b in zip(after, before)]
        r.figure("daemon_tx_per_pair", "/".join(map(str, delivered)))
        busy = [i for i, n in enumerate(delivered) if n >= 50]
        r.check("daemon delivered flows on several pairs (stats.get queue_pairs)", len(busy) >= 2,
                f"frames per pair {delivered}")
        tell_guest()
        q = wait_result(g, "qstats", d, 30)
        guest_rx = [q.get(f"rx_queue_{i}_packets", 0) for i in range(PAIRS)]
        r.figure("guest_rx_per_queue", "/".join(map(str, guest_rx)))
        r.check("guest: several RX queues received (ethtool -S)",
                sum(1 for n in guest_rx if n >= 50) >= 2, f"{guest_rx}")

        # Phase 2: the guest goes to one pair while a stream runs.
        res: dict = {}

        def stream():
            res["iperf"] = _iperf(wd, "stream", "-t", str(STREAM_SECS), "-P", "4", "-i", "1",
                                  timeout=STREAM_SECS + 60)
        t = threading.Thread(target=stream)
        t.start()
        time.sleep(SWITCH_AFTER)
        tell_guest()
        c = wait_result(g, "combined", d, 30)
        r.check("guest: ethtool -L combined 1", c.get("rc") == 0, f"rc {c.get('rc')}")
        time.sleep(1.0)  # QEMU's SET_VRING_ENABLE 0 for pairs 1..3 are in
        mid = _pairs(d, "vm1")
        detail = d.call("port.get", name="vm1")
        states = {q["index"]: q.get("state") for q in detail.get("queues", [])}
        r.check("daemon: vrings 0 and 1 enabled, 2..7 disabled",
                all(states.get(i) == "enabled" for i in (0, 1))
                and all(states.get(i) == "disabled" for i in range(2, 2 * PAIRS)),
                f"{sorted(states.items())}")
        t.join(STREAM_SECS + 90)
        end = _pairs(d, "vm1")
        ok, what = _iperf_ok(res.get("iperf"))
        r.check("the stream ran to its end across the change", ok, what)
        intervals = [iv.get("sum", {}).get("bytes", 0)
                     for iv in (res.get("iperf") or {}).get("intervals", [])]
        late = intervals[SWITCH_AFTER + 2:]
        r.figure("stream_bytes_per_s", "/".join(str(b // 1000) + "k" for b in intervals))
        r.check("traffic flowed in every second after the change", bool(late) and min(late) > 0,
                f"bytes per interval after second {SWITCH_AFTER + 2}: {late}")
        since = [e["tx_packets"] - m["tx_packets"] for e, m in zip(end, mid)]
        r.figure("daemon_tx_per_pair_after_switch", "/".join(map(str, since)))
        r.check("after the change only pair 0 receives", since[0] > 0 and not any(since[1:]),
                f"frames per pair since the change {since}")
        r.check("port still running", d.call("port.get", name="vm1").get("state") == "running",
                d.call("port.get", name="vm1").get("state"))
        mark = g.line_index
        tell_guest()
        q2 = wait_result(g, "qstats", d, 30, since=mark)
        r.note(f"guest rx per queue at the end {[q2.get(f'rx_queue_{i}_packets') for i in range(PAIRS)]}")
    except GuestError as e:
        r.check("guest ran its steps", False, str(e).splitlines()[0])
    rc = wait_done(r, g, 60, d)
    r.figure("boot_s", g.boot_time())
    r.check("guest's steps all succeeded", rc == 0, f"rc {rc}")
    check_alive(r, d)
    check_clean_stop(r, d)


def run_mq_limit(ctx: Context, r: ScenarioResult):
    wd, s1, d = node_with_port(ctx, r, "vm2", "mq-vm2.sock", 0x42, 2)
    g = ctx.guest(wd, s1, "vm2", mac=mac(0x42), reconnect=1, netdev_queues=4, smp=2,
                  cmd="sleep 60")
    g.start()
    want = "you are asking more queues than supported: 2"
    deadline = time.monotonic() + 60
    said = ""
    while time.monotonic() < deadline:
        try:
            with open(g.stderr_log, errors="replace") as f:
                said = f.read()
        except OSError:
            said = ""
        if want in said:
            break
        time.sleep(0.5)
    lines = [l for l in said.splitlines() if "queues" in l and "asking" in l]
    r.check("QEMU reports the port's maximum", want in said,
            lines[0] if lines else said.splitlines()[-1] if said else "no QEMU output")
    time.sleep(2)
    # QEMU 7.2 retries the netdev at once, again and again, and never starts
    # the guest (net_vhost_user_init waits until a start succeeds).
    r.check("QEMU did not start the guest", g.boot_time() is None,
            f"booted at {g.boot_time()} s")
    r.figure("qemu_refusals", said.count(want))
    detail = d.call("port.get", name="vm2")
    running = [q["index"] for q in detail.get("queues", []) if q.get("state") == "enabled"]
    r.check("the port never ran a ring for it", not running and detail.get("state") != "running",
            f"state {detail.get('state')}, enabled vrings {running}")
    g.kill()
    check_alive(r, d)
    check_clean_stop(r, d)
