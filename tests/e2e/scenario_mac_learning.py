"""Ports without a configured MAC (mac_policy learn), real guests.

mac-learn  two guests on ports that have no MAC, both behind the uplink
           (KubeVirt's DRA attach: the driver never sees the VM's MAC): each
           port learns its guest's MAC from the first frame, and then the
           guests ping each other and the peer outside, and the peer pings
           them (its frames are steered to the learned MACs by XDP). vm2 then
           changes its MAC in the guest (a forged source): its frames are
           dropped and counted as spoofed_source, the port keeps the MAC it
           learned, and vm1 is not affected.
"""

from __future__ import annotations

import os

from e2e_context import Context, mac
from guest_checks import check_alive, check_clean_stop, check_ping, wait_done, wait_result
from peer_namespace import NODE_NS, PEER_IP, UPLINK_IF, UplinkTopology
from scenario_result import Pending, ScenarioResult
from xvtest.guest import GuestError

VM1_IP, VM2_IP = "10.77.1.2", "10.77.1.3"
FORGED_MAC = "52:54:00:66:66:66"

# In vm2, after its pings: take a MAC its port did not learn and try again.
FORGE_CMD = (
    "ip link set $XV_IF down; ip link set $XV_IF address " + FORGED_MAC + "; ip link set $XV_IF up; "
    "sleep 1; ping -c 3 -W 1 " + PEER_IP + " > /dev/null 2>&1; rc=$?; "
    "xv result \"$(printf '\"kind\":\"forged\",\"ping_rc\":%d' $rc)\""
)


def _port(name: str, sock: str) -> dict:
    return {"name": name, "socket": sock, "mode": "server", "mac_policy": "learn", "uplink": "up0"}


def run_mac_learn(ctx: Context, r: ScenarioResult):
    if os.geteuid() != 0:
        raise Pending("needs root (network namespaces)")
    wd = ctx.scenario_dir(r.name)
    topo = UplinkTopology(ctx)
    topo.create()
    s1, s2 = os.path.join(wd, "vm1.sock"), os.path.join(wd, "vm2.sock")
    d = ctx.daemon(wd, [_port("vm1", s1), _port("vm2", s2)],
                   uplinks=[{"name": "up0", "interface": UPLINK_IF, "queues": [0]}], netns=NODE_NS)
    d.start()
    a = ctx.guest(wd, s1, "vm1", mac=mac(1), ip=f"{VM1_IP}/24", peer=PEER_IP, reconnect=1,
                  run=["wait-peer,_,90", "ping,_,5,0.2", f"wait-peer,{VM2_IP},90",
                       f"ping,{VM2_IP},5,0.2", "sleep,15"])
    b = ctx.guest(wd, s2, "vm2", mac=mac(2), ip=f"{VM2_IP}/24", peer=VM1_IP, reconnect=1,
                  # then until the peer has pinged vm2 at its learned MAC: 11 echo
                  # requests at least (vm1's wait-peer and 5 pings, the peer's 5)
                  run=["wait-peer,_,90", "ping,_,5,0.2", f"ping,{PEER_IP},5,0.2", "wait-echoes,11,90"],
                  cmd=FORGE_CMD)
    a.start()
    b.start()
    try:
        wait_result(b, "ping", d, 150)
        wait_result(b, "ping", d, 60, since=b.line_index + 1)  # vm2 -> peer: both learned now
        for g, name in ((a, "vm1"), (b, "vm2")):
            p = d.call("port.get", name=name)
            r.check(f"port {name} learned its guest's MAC", p.get("mac") == g.mac and
                    p.get("mac_source") == "learned", f"mac {p.get('mac')} ({p.get('mac_source')})")
        for ip in (VM1_IP, VM2_IP):
            p = topo.ping_from_peer(ip, 5)
            r.check(f"peer -> {ip}: ping no loss (steered to the learned MAC)",
                    p["tx"] > 0 and p["rx"] == p["tx"], f"{p['rx']}/{p['tx']} answered")
        forged = wait_result(b, "forged", d, 120)
        r.check("vm2 from a forged MAC: its ping gets no answer", forged.get("ping_rc") != 0,
                f"ping rc {forged.get('ping_rc')}")
    except GuestError as e:
        r.check("guests reached their steps", False, str(e))
    rc_b = wait_done(r, b, 120, d)
    rc_a = wait_done(r, a, 60, d)
    pings_a = a.results("ping") + [None, None]
    pings_b = b.results("ping") + [None, None]
    check_ping(r, pings_a[0], "vm1 -> peer")
    check_ping(r, pings_a[1], "vm1 -> vm2")
    check_ping(r, pings_b[0], "vm2 -> vm1")
    check_ping(r, pings_b[1], "vm2 -> peer")
    r.check("guests' steps succeeded", rc_a == 0 and rc_b == 0, f"rc vm1={rc_a} vm2={rc_b}")
    stats = d.call("stats.get")["ports"]
    spoofed = stats.get("vm2", {}).get("drops", {}).get("spoofed_source", 0)
    r.check("vm2's forged frames dropped as spoofed_source", spoofed > 0, str(spoofed))
    r.check("vm1 dropped nothing as spoofed_source",
            stats.get("vm1", {}).get("drops", {}).get("spoofed_source", 0) == 0)
    p = d.call("port.get", name="vm2")
    r.check("vm2's port keeps the MAC it learned", p.get("mac") == b.mac, str(p.get("mac")))
    check_alive(r, d)
    check_clean_stop(r, d)
