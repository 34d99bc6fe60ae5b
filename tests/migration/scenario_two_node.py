"""Two-node live migration: the guest moves from node 1's backend to node
2's (each in its own namespace with its own uplink veth on the bridge that
stands for the network), QEMU to QEMU over loopback through QMP. During
the migration the peer pings the guest every 10 ms and sends it a TCP
stream (iperf3, 5 Mbit/s); the guest pings the peer every 50 ms.

Pass: the migration completes; the guest is announced (a gratuitous ARP or
a RARP from its MAC reaches the peer); the guest's own ping loses nothing
after it resumed (at most the one request in flight at the pause); the TCP
stream survives (data in the seconds after the move, iperf3 rc 0); no
virtio, ring or fault message in the guest's kernel log (console log level
8); the bridge learned the guest on node 2's port. Figures: QEMU's total
time and downtime, the peer's lost pings and longest gap.

`backend` is xdpvhost or dpdk (the reference: DPDK's vhost library)."""

from __future__ import annotations

import json
import os
import re
import time

import qmp_migration as mig
from backends import DpdkNode, XdpvhostNode
from guest_program import PROGRAM, STOP_PORT, after_resume
from mig_context import GUEST_MAC
from network import GUEST_IP, NET_NS, PEER_IF, PEER_IP, PEER_NS, PREFIX, Network, node_ns, node_port
from peer_ping import PeerPing
from xvtest.guest import GuestError

STREAM_SECS = 30
# Modest: a TCG guest that cannot keep up with its receive ring drops its own
# ping replies with the stream, migration or not.
STREAM_RATE = "5M"


def make_backend(ctx, kind: str, wd: str, n: int):
    sock = os.path.join(wd, f"mig-n{n}.sock")
    if kind == "dpdk":
        return DpdkNode(ctx, wd, node_ns(n), sock, f"mig-n{n}")
    port = {"name": "vm", "socket": sock, "mode": "server", "mac": GUEST_MAC, "uplink": "up0"}
    sub = os.path.join(wd, f"n{n}")
    return XdpvhostNode(ctx, sub, node_ns(n), sock, [port])


def guest_pair(ctx, wd: str, src_sock: str, dst_sock: str, port: int, **kw):
    common = dict(mac=GUEST_MAC, ip=f"{GUEST_IP}/{PREFIX}", peer=PEER_IP, reconnect=1,
                  mem="256M", cmd=[PROGRAM], **kw)
    src = ctx.guest(wd, src_sock, "mig-src", **common)
    dst = ctx.guest(wd, dst_sock, "mig-dst", qemu_args=mig.incoming_args(port), **common)
    return src, dst


def stop_guest_program(net: Network):
    net.in_peer("python3", "-c",
                "import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2])), 5);"
                " s.sendall(b'stop\\n'); s.close()", GUEST_IP, str(STOP_PORT), check=False)


def check_guest_after_resume(r, net, src, dst) -> bool:
    """Stops the guest's program and checks what it reported: its own ping
    lost nothing after resume, its kernel log has no virtio / ring / fault
    message. False if the guest did not report (the check says why)."""
    stop_guest_program(net)
    try:
        kl = dst.wait_result("klog", 60)
    except GuestError as e:
        r.check("guest reported its kernel log", False, str(e)[:500])
        return False
    gp = after_resume(src.lines(), dst.lines())
    r.figure("guest_ping", gp)
    r.check("guest's own ping: nothing lost after resume (at most the request in flight at the pause)",
            gp["replies_after"] > 0 and gp["missing_after_count"] <= 1,
            f"{gp['replies_after']} replies after seq {gp['last_seq_before_pause']}, missing "
            f"{gp['missing_after'] or 'none'}")
    bad = [l for l in dst.lines() if l.startswith("XV-KLOG")]
    r.check("guest kernel log: no virtio / ring / fault message", kl["suspect"] == 0,
            "; ".join(bad[-3:]) or "clean")
    return True


def announces(tcpdump_log: str, mac: str) -> list[str]:
    try:
        with open(tcpdump_log, errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for l in lines:
        low = l.lower()
        if not low.startswith(mac.lower()) and f" {mac.lower()} " not in low:
            continue
        if re.search(rf"who-has {re.escape(GUEST_IP)} tell {re.escape(GUEST_IP)}", l) or \
           "rarp" in low or "reverse" in low or re.search(rf"reply {re.escape(GUEST_IP)} is-at", l):
            out.append(l)
    return out


def stream_survived(iperf_json: str, after_s: float) -> tuple[bool, str]:
    try:
        with open(iperf_json) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        return False, f"no iperf3 result: {e}"
    if "error" in data:
        return False, data["error"]
    ivs = data.get("intervals", [])
    late = [iv["sum"]["bytes"] for iv in ivs if iv["sum"]["start"] >= after_s]
    total = data.get("end", {}).get("sum_received", {}).get("bytes", 0)
    ok = bool(late) and sum(late[-3:]) > 0 and total > 0
    return ok, (f"{total / 1e6:.1f} MB received, {len(late)} intervals after the move, "
                f"last 3: {late[-3:]} bytes")


def run_two_node(ctx, r, backend: str = "xdpvhost", guest_announce: bool = True):
    """guest_announce False: the device does not offer GUEST_ANNOUNCE to the
    guest (QEMU guest_announce=off), so QEMU asks the destination's backend
    for SEND_RARP instead and the backend must send the RARP."""
    wd = ctx.scenario_dir(r.name)
    net = Network(2, ctx.register_netns)
    net.create()
    nodes = [make_backend(ctx, backend, wd, n) for n in (1, 2)]
    for b in nodes:
        b.start()
    port = mig.free_port()
    opts = {} if guest_announce else {"device_opts": {"guest_announce": "off"}}
    src, dst = guest_pair(ctx, wd, nodes[0].socket_path, nodes[1].socket_path, port, **opts)
    src.start()
    src.wait_for(r"^XV-READY mig", 180)
    dst.start()
    time.sleep(1.0)  # dst connected to node 2 and waits for the stream
    tcpdump_log = os.path.join(wd, "peer-tcpdump.log")
    ctx.background(["ip", "netns", "exec", PEER_NS, "tcpdump", "-i", PEER_IF, "-nn", "-e", "-l",
                    "arp or rarp"], tcpdump_log)
    for n in (1, 2):  # where the guest's frames go on the network (for the logs)
        ctx.background(["ip", "netns", "exec", NET_NS, "tcpdump", "-i", node_port(n), "-nn", "-e",
                        "-l", "icmp or arp or rarp"], os.path.join(wd, f"net-n{n}p.log"))
    ping = PeerPing(PEER_NS, GUEST_IP, os.path.join(wd, "peer-ping.log")).start()
    iperf_json = os.path.join(wd, "peer-iperf3.json")
    iperf = ctx.background(["ip", "netns", "exec", PEER_NS, "iperf3", "-c", GUEST_IP, "-t",
                            str(STREAM_SECS), "-b", STREAM_RATE, "-i", "1", "-J"], iperf_json)
    time.sleep(3.0)
    r.check("bridge: guest learned on node 1's port before", net.fdb_port(GUEST_MAC) == node_port(1),
            str(net.fdb_port(GUEST_MAC)))
    t0 = time.monotonic()
    mig.start(src, port)
    st = mig.wait(src, 180)
    moved_after = time.monotonic() - t0 + 3.0
    figs = mig.figures(st)
    r.check("migration completed", st.get("status") == "completed", str(st.get("status")))
    r.check("destination runs", mig.wait_running(dst) == "running", mig.run_state(dst))
    for k, v in figs.items():
        r.figure(k, v)
    time.sleep(4.0)
    iperf.wait(STREAM_SECS + 30)
    p = ping.stop()
    r.figure("peer_ping", p)
    r.figure("lost_pings_10ms", p["lost"])
    r.figure("max_gap_ms", p["max_gap_ms"])
    ok, detail = stream_survived(iperf_json, moved_after)
    r.check("TCP stream peer -> guest survived", ok and iperf.returncode == 0,
            f"rc {iperf.returncode}; {detail}")
    seen = announces(tcpdump_log, GUEST_MAC)
    r.check("guest announced (gratuitous ARP or RARP from its MAC at the peer)", len(seen) > 0,
            seen[0] if seen else "none")
    if not guest_announce:
        rarps = [l for l in seen if "reverse" in l.lower() or "rarp" in l.lower()]
        r.check("the backend sent a RARP from the guest's MAC (SEND_RARP)", len(rarps) > 0,
                f"{len(rarps)} RARPs" + (f": {rarps[0]}" if rarps else ""))
    r.check("bridge learned the guest on node 2's port", net.fdb_port(GUEST_MAC) == node_port(2),
            str(net.fdb_port(GUEST_MAC)))
    if not check_guest_after_resume(r, net, src, dst):
        return
    for i, b in enumerate(nodes, 1):
        r.check(f"node {i} backend alive", b.alive())
    if backend == "xdpvhost":
        for i, b in enumerate(nodes, 1):
            try:
                st = b.daemon.call("stats.get").get("ports", {}).get("vm", {})
                drops = {k: v for k, v in (st.get("drops") or {}).items() if v}
                r.note(f"node {i} port vm: rx {st.get('rx_packets')} tx {st.get('tx_packets')} "
                       f"drops {drops or 'none'}")
                full = b.daemon.call("stats.get")
                with open(os.path.join(wd, f"n{i}-stats.json"), "w") as f:
                    json.dump(full, f, indent=1)
                up = full.get("uplinks", {}).get("up0", {})
                updrops = {k: v for k, v in (up.get("drops") or {}).items() if v}
                r.note(f"node {i} uplink up0: drops {updrops or 'none'}; " + ", ".join(
                    f"{k} {v}" for k, v in up.items() if v and not isinstance(v, (dict, list))))
            except Exception as e:  # noqa: BLE001 - a note only
                r.note(f"node {i}: stats.get failed: {e}")
        log1 = nodes[0].log_text()
        r.check("node 1 logged dirty pages during the migration",
                "dirty logging on" in log1, "daemon log: 'dirty logging on'")
    rc = dst.wait_done(60)
    r.check("guest finished", rc == 0, f"rc {rc}")
