"""Same-node live migration: one xdpvhostd, two ports (vma, vmb, both owned
by one VM) on one uplink; the source QEMU on vma, the -incoming QEMU on vmb,
migrated over loopback through QMP. The ports are either mac_policy
learn-move without a configured MAC, or fixed with the guest's MAC, as the
DRA plugin adds a KubeVirt VM's source and target ports (vmb then waits
without the MAC while vma holds it).

First a migration that is cancelled half-way (bandwidth capped so that it
cannot finish): the source keeps running, the daemon turns dirty logging
off again (LOG_ALL no longer acked), the peer still reaches the guest.
Then a migration to a fresh -incoming QEMU that completes: the guest
announces itself on vmb, whose rings resumed the running guest, so the MAC
moves from vma (whose rings stopped under dirty logging) to vmb, and the
peer reaches the guest there."""

from __future__ import annotations

import os
import time

import memory_compare
import qmp_migration as mig
from backends import XdpvhostNode
from guest_program import PROGRAM
from mig_context import GUEST_MAC
from network import GUEST_IP, PEER_IF, PEER_IP, PEER_NS, PREFIX, Network, node_ns
from peer_ping import PeerPing
from scenario_two_node import announces, check_guest_after_resume

LOG_ALL = 1 << 26


def port_features(d, name: str) -> int:
    return int(str(d.call("port.get", name=name).get("features", "0x0")), 16)


def verify_memory(r, src, dst):
    """The destination, paused after the switch-over, holds the source's
    memory page for page; then it runs."""
    r.check("verify: destination paused after the switch-over", mig.run_state(dst) == "paused",
            mig.run_state(dst))
    same, summary, details = memory_compare.compare(src, dst)
    with open(os.path.join(os.path.dirname(dst.console_log), "memory-compare.txt"), "w") as f:
        f.write(summary + "\n" + "\n".join(details) + "\n")
    for line in details:
        r.note(line)
    r.check("verify: destination memory is the source's at the switch-over", same, summary)
    dst.qmp("cont")


def run_same_node(ctx, r, policy="learn-move"):
    wd = ctx.scenario_dir(r.name)
    net = Network(1, ctx.register_netns)
    net.create()
    socks = {p: os.path.join(wd, f"mig-{p}.sock") for p in ("vma", "vmb")}
    owner = {"namespace": "tenants", "vm": "mig"}  # one VM: the hand-over needs it
    mac = {"mac": GUEST_MAC} if policy == "fixed" else {}
    ports = [{"name": p, "socket": s, "mode": "server", "mac_policy": policy, "uplink": "up0",
              "owner": owner, **mac} for p, s in socks.items()]
    node = XdpvhostNode(ctx, os.path.join(wd, "node"), node_ns(1), socks["vma"], ports).start()
    d = node.daemon
    common = dict(mac=GUEST_MAC, ip=f"{GUEST_IP}/{PREFIX}", peer=PEER_IP, reconnect=1,
                  mem="256M", cmd=[PROGRAM])
    src = ctx.guest(wd, socks["vma"], "mig-src", **common)
    src.start()
    src.wait_for(r"^XV-READY mig", 180)
    time.sleep(1.0)
    r.check("vma holds the guest's MAC", d.call("port.get", name="vma").get("mac") == GUEST_MAC,
            str(d.call("port.get", name="vma").get("mac")))
    if policy == "fixed":
        r.check("vmb, configured with it too, waits without it",
                "mac" not in d.call("port.get", name="vmb"), str(d.call("port.get", name="vmb")))

    # ---- cancelled -------------------------------------------------------
    port = mig.free_port()
    dst0 = ctx.guest(wd, socks["vmb"], "mig-dst0", qemu_args=mig.incoming_args(port), **common)
    dst0.start()
    time.sleep(1.5)
    mig.start(src, port, max_bandwidth=1 << 20)  # 1 MiB/s: 256 MiB cannot finish
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not port_features(d, "vma") & LOG_ALL:
        time.sleep(0.2)
    r.check("cancel: source acked LOG_ALL while migrating", bool(port_features(d, "vma") & LOG_ALL),
            hex(port_features(d, "vma")))
    time.sleep(1.0)
    src.qmp("migrate_cancel")
    st = mig.wait(src, 30)
    r.check("cancel: migration cancelled", st.get("status") == "cancelled", str(st.get("status")))
    r.check("cancel: source still running", mig.run_state(src) == "running", mig.run_state(src))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and port_features(d, "vma") & LOG_ALL:
        time.sleep(0.2)
    r.check("cancel: logging off again (LOG_ALL no longer acked)",
            not port_features(d, "vma") & LOG_ALL, hex(port_features(d, "vma")))
    r.check("cancel: the daemon said logging on, then off",
            d.log_lines("dirty logging on") != [] and d.log_lines("dirty logging off") != [],
            f"{len(d.log_lines('dirty logging on'))} on, {len(d.log_lines('dirty logging off'))} off")
    p = net.in_peer("ping", "-c", "5", "-i", "0.2", "-W", "2", GUEST_IP, check=False).stdout
    r.check("cancel: the peer still reaches the guest on vma", " 0% packet loss" in p,
            p.strip().splitlines()[-2] if p.strip() else "no output")
    dst0.kill()
    src.qmp("migrate-set-parameters", **{"max-bandwidth": 1 << 30})  # QEMU keeps the cap

    # ---- completed -------------------------------------------------------
    port = mig.free_port()
    paused = ["-S"] if ctx.verify_memory else []
    dst = ctx.guest(wd, socks["vmb"], "mig-dst", qemu_args=mig.incoming_args(port) + paused, **common)
    dst.start()
    time.sleep(1.5)
    tcpdump_log = os.path.join(wd, "peer-tcpdump.log")
    ctx.background(["ip", "netns", "exec", PEER_NS, "tcpdump", "-i", PEER_IF, "-nn", "-e", "-l",
                    "arp or rarp"], tcpdump_log)
    ping = PeerPing(PEER_NS, GUEST_IP, os.path.join(wd, "peer-ping.log")).start()
    time.sleep(1.0)
    mig.start(src, port)
    st = mig.wait(src, 120)
    r.check("migration completed", st.get("status") == "completed", str(st.get("status")))
    if ctx.verify_memory:
        verify_memory(r, src, dst)
    r.check("destination runs", mig.wait_running(dst) == "running", mig.run_state(dst))
    for k, v in mig.figures(st).items():
        r.figure(k, v)
    time.sleep(4.0)
    pr = ping.stop()
    r.figure("lost_pings_10ms", pr["lost"])
    r.figure("max_gap_ms", pr["max_gap_ms"])
    r.check("peer's ping answered again after the move", pr["replies"] > 0 and pr["max_gap_ms"] < 3000,
            str(pr))
    vmb = d.call("port.get", name="vmb")
    r.check("the MAC moved to vmb (its guest announced last)", vmb.get("mac") == GUEST_MAC,
            f"vmb mac {vmb.get('mac')} ({vmb.get('mac_source')}), vma mac "
            f"{d.call('port.get', name='vma').get('mac')}")
    r.check("the daemon logged the hand-over", d.log_lines(r"takes MAC .* over from port vma") != [],
            (d.log_lines(r"takes MAC") or ["none"])[-1])
    seen = announces(tcpdump_log, GUEST_MAC)
    r.check("guest announced (gratuitous ARP or RARP from its MAC at the peer)", len(seen) > 0,
            seen[0] if seen else "none")
    if not check_guest_after_resume(r, net, src, dst):
        return
    r.check("xdpvhostd alive", d.alive())
    rc = dst.wait_done(60)
    r.check("guest finished", rc == 0, f"rc {rc}")
