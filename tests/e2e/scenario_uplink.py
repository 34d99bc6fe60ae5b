"""A guest and a peer namespace through xdpvhostd's AF_XDP uplink on a veth.

uplink  guest 10.77.1.2 on port vm1 ("uplink":"up0"), xdpvhostd in namespace
        xve2e-node with uplink up0 (veth, queue 0), the peer 10.77.1.100 in
        xve2e-peer (see peer_namespace.py). ARP both ways (the peer's
        neighbour table is flushed, so its ARP request must reach the guest
        through the flood path), ping both ways with no loss, iperf3 TCP
        guest -> peer and peer -> guest (-R), UDP at a modest rate. Frames
        leaving the uplink must carry correct L4 checksums although the guest
        sends NEEDS_CSUM frames: their checksums are left to the kernel
        through AF_XDP TX metadata (the uplink's tx_checksum "offloaded") or
        finished in software; the peer counts no checksum error
        (TcpInCsumErrors / UdpInCsumErrors stay 0), and with software
        checksums tcpdump -vv in the peer finds no "incorrect" one. Segmentation offload: the guest's TSO
        frames are segmented in software on the way out (the uplink's
        gso_segments), and the peer's segments are coalesced by GRO into
        TSO frames for the guest (gro_frames; the port's gso_tx). 16 MiB
        HTTP transfers both ways have their sha256 compared at the far end.
jumbo   the same with MTU 9000 everywhere (both veths, the port, the guest):
        8972-byte pings both ways, TCP both ways, the transfers; frames
        longer than one UMEM frame cross the uplink as multi-buffer chains,
        and GRO coalesces the peer's 9000-byte segments into TSO frames for
        the guest as it does MTU 1500 ones.

PENDING (not passed) while xdpvhostd rejects the uplink config, fails to
start with it, or does not report the uplink bound over the control socket.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import time

from e2e_context import Context, mac, port
from guest_checks import (NEVER_FEATURES, TSO_FEATURES, check_alive, check_clean_stop,
                          check_counters, check_features, check_iperf, check_offload, check_ping,
                          check_transfer, offload_counters, wait_done, wait_result)
from peer_namespace import NODE_NS, PEER_IF, PEER_IP, PEER_NS, UPLINK_IF, UplinkTopology
from scenario_result import Pending, ScenarioResult
from xvtest.daemon import DaemonExited
from xvtest.guest import GuestError

GUEST_IP = "10.77.1.2"
UDP_RATE = "20M"
CSUM_COUNTERS = ("TcpInCsumErrors", "UdpInCsumErrors", "IcmpInCsumErrors", "UdpLiteInCsumErrors")


def _uplink_ready(d) -> str:
    """'' when the daemon has the uplink bound, else why it is pending."""
    try:
        status = d.call("status")
    except Exception as e:  # noqa: BLE001
        if re.search(rf"\b{UPLINK_IF}\b.*(bound|bind|queue|xsk|af_xdp)", d.log_text(this_run=True), re.I):
            return ""
        return (f"control socket does not answer ({e}) and the log does not mention uplink "
                f"{UPLINK_IF}")
    ups = [u for u in status.get("uplinks", []) if u.get("name") == "up0"]
    if not ups:
        return "xdpvhostd accepts the uplink config but status lists no uplink up0 (not implemented yet?)"
    queues = ups[0].get("queues", [])
    bound = [q for q in queues if q.get("bind_mode") in ("copy", "zerocopy")]
    if not bound:
        return f"uplink up0 is not bound: link {ups[0].get('link')}, queues {queues}"
    return ""


BLOB_MB = 16


def _peer_blob(wd: str, mb: int = BLOB_MB) -> tuple[str, dict]:
    """A random file for the peer's HTTP server: (its directory, {bytes, sha256})."""
    www = os.path.join(wd, "peer-www")
    os.makedirs(www, exist_ok=True)
    data = os.urandom(mb << 20)
    with open(os.path.join(www, "blob"), "wb") as f:
        f.write(data)
    return www, {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def _peer_fetch(url: str, timeout: float = 120, ns: str = PEER_NS) -> dict:
    """busybox wget in the peer namespace `ns`: {bytes, sha256, seconds, rc}."""
    t0 = time.monotonic()
    p = subprocess.run(["ip", "netns", "exec", ns, "busybox", "wget", "-q", "-O", "-", url],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return {"bytes": len(p.stdout), "sha256": hashlib.sha256(p.stdout).hexdigest(),
            "seconds": round(time.monotonic() - t0, 2), "rc": p.returncode}


def run_uplink(ctx: Context, r: ScenarioResult):
    _run_uplink(ctx, r, mtu=None)


def _uplink_tx_checksum(d) -> str:
    """The uplink's tx_checksum (offloaded | software | unbound) from uplink.list."""
    try:
        for u in d.call("uplink.list"):
            if u.get("name") == "up0" and u.get("queues"):
                return u["queues"][0].get("tx_checksum", "?")
    except Exception:  # noqa: BLE001
        pass
    return "?"


def run_jumbo(ctx: Context, r: ScenarioResult):
    _run_uplink(ctx, r, mtu=9000)


def _run_uplink(ctx: Context, r: ScenarioResult, mtu: int | None):
    if os.geteuid() != 0:
        raise Pending("needs root (network namespaces)")
    wd = ctx.scenario_dir(r.name)
    topo = UplinkTopology(ctx)
    topo.create()
    extra = {}
    if mtu:
        topo.set_mtu(mtu)
        extra["mtu"] = mtu
    s1 = os.path.join(wd, "vm1.sock")
    d = ctx.daemon(wd, [port("vm1", s1, "server", mac(1), uplink="up0", **extra)],
                   uplinks=[{"name": "up0", "interface": UPLINK_IF, "queues": [0]}], netns=NODE_NS)
    try:
        d.start()
    except (DaemonExited, TimeoutError):
        said = [l for l in d.log_text(this_run=True).splitlines()
                if l.strip() and not l.startswith("=====")]
        raise Pending(f"xdpvhostd rejects or fails the uplink config (rc={d.returncode}): "
                      + (" | ".join(said[-3:]) or "no output")) from None
    why = _uplink_ready(d)
    if why:
        raise Pending(why)
    r.say(f"uplink up0 bound: {d.call('status').get('uplinks')}")
    ctx.background(["ip", "netns", "exec", PEER_NS, "iperf3", "-s"], os.path.join(wd, "peer-iperf3.log"))
    www, peer_blob = _peer_blob(wd)
    ctx.background(["ip", "netns", "exec", PEER_NS, "busybox", "httpd", "-f", "-p", "8080",
                    "-h", www], os.path.join(wd, "peer-httpd.log"))
    tcpdump_log = os.path.join(wd, "peer-tcpdump.log")
    ctx.background(["ip", "netns", "exec", PEER_NS, "tcpdump", "-i", PEER_IF, "-nn", "-vv", "-l",
                    "-c", "600", "ip and (tcp or udp or icmp)"], tcpdump_log)
    before = topo.nstat()
    secs = ctx.iperf_secs if not mtu else ctx.short_iperf_secs
    ping_size = (mtu - 28) if mtu else 56
    g = ctx.guest(wd, s1, "vm1", mac=mac(1), ip=f"{GUEST_IP}/24", peer=PEER_IP, reconnect=1,
                  mtu=mtu,
                  run=["wait-peer,_,90", f"ping,_,10,0.2,{ping_size}", f"http-serve,{BLOB_MB}",
                       "http-get,_,120", f"iperf3-client,_,{secs}", f"iperf3-client,_,{secs},-R",
                       f"iperf3-client,_,{secs},-u,-b,{UDP_RATE}"])
    g.start()
    guest_blob = None
    try:
        wait_result(g, "wait-peer", d, 150)
        # The guest resolved the peer (ARP request flooded out, reply steered
        # back by MAC). Now the other way: the peer forgets the guest and
        # must ARP for it through the uplink.
        topo.flush_neighbours()
        p = topo.ping_from_peer(GUEST_IP, 10)
        r.check("peer -> guest: ping no loss (after flushing the peer's ARP cache)",
                p["tx"] > 0 and p["rx"] == p["tx"], f"{p['rx']}/{p['tx']} answered, rtt {p.get('rtt')} ms")
        r.figure("rtt_ms_rev", p.get("rtt"))
        neigh = topo.neighbour(GUEST_IP)
        r.check("peer resolved the guest's MAC by ARP", mac(1) in neigh.lower(), neigh or "no entry")
        if mtu:
            p = topo.ping_from_peer(GUEST_IP, 5, size=ping_size)
            r.check(f"peer -> guest: {ping_size}-byte ping no loss", p["tx"] > 0 and p["rx"] == p["tx"],
                    f"{p['rx']}/{p['tx']} answered, rtt {p.get('rtt')} ms")
        guest_blob = wait_result(g, "http-serve", d, 150)
        check_transfer(r, guest_blob, _peer_fetch(f"http://{GUEST_IP}:8080/blob"),
                       "HTTP guest -> peer", "http_mbps")
    except GuestError as e:
        r.check("guest reached the peer", False, str(e))
    rc = wait_done(r, g, 240, d)
    r.figure("boot_s", g.boot_time())
    check_ping(r, (g.results("ping") or [None])[-1], "guest -> peer", "rtt_ms")
    tests = g.results("iperf3") + [None, None, None]
    check_iperf(r, tests[0], "TCP guest -> peer", "tcp_mbps", "retrans")
    check_iperf(r, tests[1], "TCP peer -> guest (-R)", "tcp_rev_mbps", "retrans_rev")
    check_iperf(r, tests[2], f"UDP guest -> peer at {UDP_RATE}", "udp_mbps", max_udp_loss=5.0)
    check_transfer(r, peer_blob, (g.results("http-get") or [None])[-1], "HTTP peer -> guest",
                   "http_rev_mbps")
    r.check("guest's steps all succeeded", rc == 0, f"rc {rc}")
    check_features(r, g, "vm1", present=("CSUM", "GUEST_CSUM") + TSO_FEATURES,
                   absent=NEVER_FEATURES)
    time.sleep(0.5)
    after = topo.nstat()
    for c in CSUM_COUNTERS:
        delta = after.get(c, 0) - before.get(c, 0)
        r.check(f"peer: {c} stays 0", delta == 0, f"+{delta}")
    r.figure("peer_tcp_in_segs", after.get("TcpInSegs", 0) - before.get("TcpInSegs", 0))
    r.figure("peer_udp_in_dgrams", after.get("UdpInDatagrams", 0) - before.get("UdpInDatagrams", 0))
    try:
        with open(tcpdump_log, errors="replace") as f:
            dump = f.read()
    except OSError:
        dump = ""
    from_guest = [l for l in dump.splitlines() if f" {GUEST_IP}." in l and " > " in l]
    bad = [l for l in dump.splitlines() if re.search(r"incorrect|bad (udp|tcp) cksum", l)]
    r.check("tcpdump in the peer captured frames from the guest", len(from_guest) > 0,
            f"{len(from_guest)} header lines")
    tx_checksum = _uplink_tx_checksum(d)
    if tx_checksum == "offloaded":
        # The kernel's skbs carry the guest's checksums as CHECKSUM_PARTIAL
        # to the peer, whose stack takes them as verified and whose tcpdump
        # sees them unfinished: the peer's checksum error counters above are
        # the check.
        r.note(f"uplink up0 tx_checksum offloaded: tcpdump sees unfinished checksums "
               f"({len(bad)} lines), the peer's stack counts no errors")
    else:
        r.check("tcpdump in the peer: no incorrect TCP/UDP checksum", not bad,
                bad[0] if bad else f"{len(dump.splitlines())} lines checked")
    ports = check_counters(r, d, ["vm1"], "after traffic")
    if "vm1" in ports:
        c = offload_counters(ports["vm1"])
        r.say(f"port vm1 offload counters: {c}")
        # TSO frames from the guest; GRO frames to it whole (jumbo segments
        # too: they arrive as multi-buffer chains, which GRO coalesces).
        check_offload(r, c, "port vm1", {"gso_rx": True, "gso_tx": True})
    try:
        st = d.call("stats.get", uplink="up0")["uplinks"].get("up0", {})
        c = offload_counters(st)
        r.say(f"uplink up0 offload counters: {c}")
        # The guest's TSO frames cut into MTU frames, their checksums left to
        # the kernel (tx_checksum offloaded) or finished here -- always here
        # for jumbo segments, which span several UMEM frames; the peer's
        # segments coalesced for the guest.
        want = {"gso_segments": True, "gro_frames": True}
        want["csum_offloaded" if tx_checksum == "offloaded" and not mtu else "csum_software"] = True
        check_offload(r, c, "uplink up0", want)
        r.say(f"uplink up0 tx_checksum: {tx_checksum}")
        r.check("uplink up0 counted frames both ways",
                st.get("rx_packets", 0) > 0 and st.get("tx_packets", 0) > 0,
                f"rx {st.get('rx_packets')} / tx {st.get('tx_packets')} pkts")
        drops = {k: v for k, v in (st.get("drops") or {}).items() if v}
        xsk = {k: st.get(k) for k in ("rx_dropped", "rx_ring_full", "rx_fill_ring_empty_descs",
                                      "tx_ring_empty_descs", "rx_invalid_descs",
                                      "tx_invalid_descs") if st.get(k)}
        if drops or xsk:
            r.note(f"uplink up0 drops {drops}, AF_XDP socket counters {xsk}")
    except Exception as e:  # noqa: BLE001
        r.skip("uplink up0 counted frames both ways", f"control socket: {e}")
    check_alive(r, d)
    check_clean_stop(r, d)
