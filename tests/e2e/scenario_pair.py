"""Two guests on one daemon, switched locally.

pair         QEMU is the vhost-user client (reconnect=1), xdpvhostd the
             server: ping both ways, a 16 MiB HTTP transfer whose sha256 is
             compared at the far end, iperf3 TCP both directions, UDP at a
             modest rate; default device options: CSUM and TSO negotiated
             both ways, so 64 KiB TSO frames pass guest to guest whole (the
             ports' gso_rx / gso_tx counters show it, nothing is segmented);
             counters and negotiated features over the control socket.
tso-off      the same pair with vm2's TSO off (host_tso4/6=off,
             guest_tso4/6=off): vm1 still sends TSO frames, which the daemon
             segments in software for vm2 (vm2's gso_segments); the transfer's
             sha256 and TCP both ways.
qemu-server  QEMU is the vhost-user server, xdpvhostd's ports are clients
             (KubeVirt's layout): ping both ways and a short TCP test.
"""

from __future__ import annotations

from e2e_context import Context, mac, two_ports
from guest_checks import (NEVER_FEATURES, TSO_FEATURES, check_alive, check_clean_stop,
                          check_control_features, check_counters, check_features, check_iperf,
                          check_offload, check_ping, check_port_states, check_transfer,
                          offload_counters, resources_line, wait_done, wait_result)
from scenario_result import ScenarioResult
from xvtest.guest import GuestError

NET = "10.77.0"
UDP_RATE = "20M"

OFFLOAD_CMD = (
    "xv result \"$(printf '\"kind\":\"offload\",\"tx_csum\":\"%s\",\"tso\":\"%s\",\"rx_csum\":\"%s\"' "
    "\"$(ethtool -k $XV_IF | awk -F': ' '/^tx-checksumming/{print $2}')\" "
    "\"$(ethtool -k $XV_IF | awk -F': ' '/^tcp-segmentation-offload/{print $2}')\" "
    "\"$(ethtool -k $XV_IF | awk -F': ' '/^rx-checksumming/{print $2}')\")\""
)


def run_pair(ctx: Context, r: ScenarioResult):
    wd = ctx.scenario_dir(r.name)
    s1, s2, ports = two_ports(wd, "server")
    d = ctx.daemon(wd, ports)
    d.start()
    r.say(f"xdpvhostd pid {d.pid}, control socket answers: {d.answers()}")
    secs = ctx.iperf_secs
    a = ctx.guest(wd, s1, "vm1", mac=mac(1), ip=f"{NET}.1/24", peer=f"{NET}.2", reconnect=1,
                  run=["wait-peer,_,90", "ping,_,10,0.2", "http-serve,16", "iperf3-server,180",
                       "iperf3-server,180", "iperf3-server,180"])
    b = ctx.guest(wd, s2, "vm2", mac=mac(2), ip=f"{NET}.2/24", peer=f"{NET}.1", reconnect=1,
                  run=["wait-peer,_,90", "ping,_,10,0.2", "http-get,_,120",
                       f"iperf3-client,_,{secs}", f"iperf3-client,_,{secs},-R",
                       f"iperf3-client,_,{secs},-u,-b,{UDP_RATE}"],
                  cmd=OFFLOAD_CMD)
    a.start()
    b.start()
    r.say(f"guests under {a.accel} ({a.accel_reason})")
    r.figure("accel", a.accel)
    try:
        wait_result(b, "ping", d, 120)
        check_port_states(r, d, ["vm1", "vm2"], "running", "while guests run")
        check_control_features(r, d, "vm2", b, "vm2")
    except GuestError as e:
        r.check("vm2 reached its ping step", False, str(e))
    rc_b = wait_done(r, b, 240, d)
    rc_a = wait_done(r, a, 60 if rc_b == 0 else 5, d)
    r.figure("boot_s", f"{a.boot_time()}/{b.boot_time()}")
    check_ping(r, (a.results("ping") or [None])[-1], "vm1 -> vm2", "rtt_ms")
    check_ping(r, (b.results("ping") or [None])[-1], "vm2 -> vm1", "rtt_ms_rev")
    tests = b.results("iperf3")
    while len(tests) < 3:
        tests.append(None)
    check_iperf(r, tests[0], "TCP vm2 -> vm1", "tcp_mbps", "retrans")
    check_iperf(r, tests[1], "TCP vm1 -> vm2 (-R)", "tcp_rev_mbps", "retrans_rev")
    check_iperf(r, tests[2], f"UDP vm2 -> vm1 at {UDP_RATE}", "udp_mbps", max_udp_loss=5.0)
    check_transfer(r, (a.results("http-serve") or [None])[-1],
                   (b.results("http-get") or [None])[-1], "HTTP vm1 -> vm2", "http_mbps")
    r.check("guests' steps all succeeded", rc_a == 0 and rc_b == 0, f"rc vm1={rc_a} vm2={rc_b}")
    for g in (a, b):
        check_features(r, g, g.name, present=("CSUM", "GUEST_CSUM") + TSO_FEATURES,
                       absent=NEVER_FEATURES)
    off = b.results("offload")
    if off:
        o = off[-1]
        r.check("vm2 checksums its TX in the device (NEEDS_CSUM frames)",
                str(o.get("tx_csum", "")).startswith("on"), f"tx-checksumming: {o.get('tx_csum')}")
        r.check("vm2 segments its TCP in the device (TSO on)", str(o.get("tso", "")).startswith("on"),
                f"tcp-segmentation-offload: {o.get('tso')}")
    else:
        r.check("vm2 offload state reported", False, "no offload result")
    stats = check_counters(r, d, ["vm1", "vm2"], "after traffic")
    for p in ("vm1", "vm2"):
        if p in stats:
            c = offload_counters(stats[p])
            r.say(f"port {p} offload counters: {c}")
            # Both take TSO: GSO frames in from the guest and out to it whole,
            # none cut here.
            check_offload(r, c, f"port {p}", {"gso_rx": True, "gso_tx": True,
                                              "gso_segments": False})
    res = d.resources()
    r.figure("fds", res["fds"])
    r.figure("rss_kb", res["rss_kb"])
    r.say("daemon " + resources_line(res))
    check_alive(r, d)
    check_clean_stop(r, d)


def run_qemu_server(ctx: Context, r: ScenarioResult):
    wd = ctx.scenario_dir(r.name)
    s1, s2, ports = two_ports(wd, "client")
    secs = ctx.short_iperf_secs
    a = ctx.guest(wd, s1, "vm1", mac=mac(1), ip=f"{NET}.1/24", peer=f"{NET}.2", server=True,
                  run=["wait-peer,_,90", "ping,_,5,0.2", "iperf3-server,180"])
    b = ctx.guest(wd, s2, "vm2", mac=mac(2), ip=f"{NET}.2/24", peer=f"{NET}.1", server=True,
                  run=["wait-peer,_,90", "ping,_,5,0.2", f"iperf3-client,_,{secs}"])
    a.start()
    b.start()
    a.wait_socket()
    b.wait_socket()
    r.say("both QEMUs listen; starting xdpvhostd with client-mode ports")
    d = ctx.daemon(wd, ports)
    d.start()
    try:
        wait_result(b, "ping", d, 120)
        check_port_states(r, d, ["vm1", "vm2"], "running", "while guests run")
    except GuestError as e:
        r.check("vm2 reached its ping step", False, str(e))
    rc_b = wait_done(r, b, 180, d)
    rc_a = wait_done(r, a, 60 if rc_b == 0 else 5, d)
    r.figure("boot_s", f"{a.boot_time()}/{b.boot_time()}")
    check_ping(r, (a.results("ping") or [None])[-1], "vm1 -> vm2", "rtt_ms")
    check_ping(r, (b.results("ping") or [None])[-1], "vm2 -> vm1")
    check_iperf(r, (b.results("iperf3") or [None])[0], "TCP vm2 -> vm1", "tcp_mbps", "retrans")
    r.check("guests' steps all succeeded", rc_a == 0 and rc_b == 0, f"rc vm1={rc_a} vm2={rc_b}")
    check_port_states(r, d, ["vm1", "vm2"], "waiting", "after the guests powered off")
    check_alive(r, d)
    check_clean_stop(r, d)


def run_tso_off(ctx: Context, r: ScenarioResult):
    wd = ctx.scenario_dir(r.name)
    s1, s2, ports = two_ports(wd, "server")
    d = ctx.daemon(wd, ports)
    d.start()
    secs = ctx.short_iperf_secs
    a = ctx.guest(wd, s1, "vm1", mac=mac(1), ip=f"{NET}.1/24", peer=f"{NET}.2", reconnect=1,
                  run=["wait-peer,_,90", "ping,_,5,0.2", "http-serve,16", "iperf3-server,180",
                       "iperf3-server,180"])
    b = ctx.guest(wd, s2, "vm2", mac=mac(2), ip=f"{NET}.2/24", peer=f"{NET}.1", reconnect=1,
                  host_tso=False, guest_tso=False,
                  run=["wait-peer,_,90", "ping,_,5,0.2", "http-get,_,120",
                       f"iperf3-client,_,{secs}", f"iperf3-client,_,{secs},-R"],
                  cmd=OFFLOAD_CMD)
    a.start()
    b.start()
    rc_b = wait_done(r, b, 240, d)
    rc_a = wait_done(r, a, 60 if rc_b == 0 else 5, d)
    check_ping(r, (b.results("ping") or [None])[-1], "vm2 -> vm1", "rtt_ms")
    tests = b.results("iperf3") + [None, None]
    check_iperf(r, tests[0], "TCP vm2 -> vm1", "tcp_mbps", "retrans")
    check_iperf(r, tests[1], "TCP vm1 -> vm2 (-R)", "tcp_rev_mbps", "retrans_rev")
    check_transfer(r, (a.results("http-serve") or [None])[-1],
                   (b.results("http-get") or [None])[-1], "HTTP vm1 (TSO) -> vm2 (no TSO)",
                   "http_mbps")
    r.check("guests' steps all succeeded", rc_a == 0 and rc_b == 0, f"rc vm1={rc_a} vm2={rc_b}")
    check_features(r, a, "vm1", present=TSO_FEATURES)
    check_features(r, b, "vm2", present=("CSUM", "GUEST_CSUM"),
                   absent=("HOST_TSO4", "HOST_TSO6", "GUEST_TSO4", "GUEST_TSO6"))
    off = b.results("offload")
    r.check("vm2 has TSO off", bool(off) and str(off[-1].get("tso", "")).startswith("off"),
            f"tcp-segmentation-offload: {off[-1].get('tso') if off else None}")
    stats = check_counters(r, d, ["vm1", "vm2"], "after traffic")
    if "vm1" in stats and "vm2" in stats:
        c1, c2 = offload_counters(stats["vm1"]), offload_counters(stats["vm2"])
        r.say(f"offload counters: vm1 {c1}, vm2 {c2}")
        check_offload(r, c1, "port vm1 (TSO)", {"gso_rx": True})
        # vm1's TSO frames are cut here for vm2, never handed to it whole.
        check_offload(r, c2, "port vm2 (no TSO)", {"gso_segments": True, "gso_tx": False,
                                                     "gso_rx": False})
    check_alive(r, d)
    check_clean_stop(r, d)
