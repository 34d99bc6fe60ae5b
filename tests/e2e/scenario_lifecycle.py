"""Guests and daemons that go away and come back; the daemon must not leak.

reboot                 virtio reset: QMP system_reset (twice), then a new QEMU
                       whose guest reboots itself (`reboot -f`, twice); after
                       every boot the guest pings its peer again.
qemu-restart           QEMU (vhost-user client, daemon server) is killed
                       (SIGKILL) and started again on the same socket,
                       1 warm-up + N cycles; each cycle the new guest pings its
                       peer. After each cycle the daemon's open fds, RssAnon,
                       VmRSS, VmSize and guest-memory (memfd) mappings are
                       sampled: none may grow after the warm-up cycle.
qemu-restart-server    the same with QEMU as vhost-user server and the daemon's
                       ports as clients that reconnect (KubeVirt's layout).
daemon-restart-client  QEMU is the vhost-user server, xdpvhostd's ports are
                       clients; xdpvhostd is killed (SIGKILL) and started again
                       (twice) while both QEMUs keep running: traffic resumes
                       with no manual step.
daemon-restart-server  the same with xdpvhostd as server and QEMU as client
                       with reconnect=1.
"""

from __future__ import annotations

import time

from e2e_context import Context, mac, two_ports
from guest_checks import (check_alive, check_clean_stop, check_ping, check_port_states,
                          disconnects, first_result_after, resources_line, wait_booted,
                          wait_frontend_gone, wait_result)
from scenario_result import ScenarioResult
from xvtest.guest import GuestError

NET = "10.77.0"

# Guest loop for the daemon-restart scenarios: wait for the peer, ping it 3
# times, again and again; the host looks for a loss-free ping after a restart.
PING_LOOP = ("i=0; while [ $i -lt 500 ]; do xv wait-peer _ 120 || exit 1; "
             "xv ping _ 3 0.2; sleep 0.3; i=$((i+1)); done")


def _peer(ctx: Context, wd: str, sock: str, **kw):
    """vm2: answers pings until it is killed."""
    return ctx.guest(wd, sock, "vm2", mac=mac(2), ip=f"{NET}.2/24", peer=f"{NET}.1",
                     run=["serve"], **kw)


def _no_growth(r: ScenarioResult, samples: list[dict], label: str):
    """samples[0] is after the warm-up cycle; nothing may grow after it."""
    if len(samples) < 2:
        r.check(f"{label}: enough samples", False, f"{len(samples)} sample(s)")
        return
    fds = [s["fds"] for s in samples]
    maps = [s["memfd_maps"] for s in samples]
    rss = [s["rss_kb"] for s in samples]
    anon = [s["anon_kb"] for s in samples]
    shmem = [s["shmem_kb"] for s in samples]
    vsz = [s["vsz_kb"] for s in samples]
    if None in fds or None in rss or None in anon:
        r.check(f"{label}: daemon resources readable", False, f"{samples}")
        return
    r.figure("fds", "/".join(map(str, fds)))
    r.figure("rss_kb", "/".join(map(str, rss)))
    r.figure("anon_kb", "/".join(map(str, anon)))
    r.figure("shmem_kb", "/".join(map(str, shmem)))
    r.figure("vsz_kb", "/".join(map(str, vsz)))
    r.figure("memfd_maps", "/".join(map(str, maps)))
    r.check(f"{label}: open fds do not grow after the warm-up cycle", max(fds[1:]) <= fds[0],
            f"fds per cycle {fds}")
    r.check(f"{label}: guest memory mappings released (memfd maps constant)",
            max(maps[1:]) <= maps[0], f"memfd mappings per cycle {maps}")
    # The daemon's own memory (heap, stacks): a leak per connection makes it
    # grow at every cycle. RssShmem is left out: it grows while the daemon
    # writes into not yet touched pages of the peer guest's memory.
    growth = anon[-1] - anon[0]
    monotonic = growth > 0 and all(b > a for a, b in zip(anon, anon[1:]))
    r.check(f"{label}: RssAnon does not grow at every cycle", not monotonic,
            f"RssAnon KiB per cycle {anon} (growth {growth} KiB)")
    r.check(f"{label}: VmRSS growth below 16 MiB", rss[-1] - rss[0] < 16 * 1024,
            f"VmRSS KiB per cycle {rss}")
    vgrowth = vsz[-1] - vsz[0]
    r.check(f"{label}: VmSize does not grow (no leaked mapping)",
            not (all(b > a for a, b in zip(vsz, vsz[1:])) and vgrowth > 0) and vgrowth < 64 * 1024,
            f"VmSize KiB per cycle {vsz}")


def run_reboot(ctx: Context, r: ScenarioResult):
    wd = ctx.scenario_dir(r.name)
    s1, s2, ports = two_ports(wd, "server")
    d = ctx.daemon(wd, ports)
    d.start()
    b = _peer(ctx, wd, s2, reconnect=1)
    b.start()
    boots, samples = [], []

    def ping_after_boot(g, since: int, label: str) -> int:
        boot = wait_booted(g, d, 120, since)
        i = g.line_index
        boots.append(boot)
        res = wait_result(g, "ping", d, 120, i)
        j = g.line_index
        check_ping(r, res, label)
        samples.append(d.settled_resources())
        r.say(f"{label}: boot {boot} s; daemon {resources_line(samples[-1])}")
        return j + 1

    # QMP system_reset: QEMU resets the virtio device under the running guest.
    a = ctx.guest(wd, s1, "vm1-qmp", mac=mac(1), ip=f"{NET}.1/24", peer=f"{NET}.2",
                  allow_reboot=True, reconnect=1,
                  run=["wait-peer,_,90", "ping,_,5,0.2", "serve"])
    a.start()
    try:
        since = ping_after_boot(a, 0, "first boot")
        for k in (1, 2):
            a.qmp("system_reset")
            since = ping_after_boot(a, since, f"after QMP system_reset #{k}")
        check_port_states(r, d, ["vm1"], "running", "after system_reset")
    except GuestError as e:
        r.check("guest came back after system_reset", False, str(e))
    n = disconnects(d, "vm1")
    a.sigkill()
    wait_frontend_gone(d, "vm1", n)

    # The guest reboots itself: its last step is `reboot -f` (after 2 s, so
    # that the daemon is sampled while the device is up); every boot runs the
    # steps again, so it reboots until it is killed.
    a2 = ctx.guest(wd, s1, "vm1-reboot", mac=mac(1), ip=f"{NET}.1/24", peer=f"{NET}.2",
                   allow_reboot=True, reconnect=1,
                   run=["wait-peer,_,90", "ping,_,5,0.2"], cmd="sleep 2; reboot -f")
    a2.start()
    try:
        since = ping_after_boot(a2, 0, "new QEMU, first boot")
        for k in (1, 2):
            since = ping_after_boot(a2, since, f"after in-guest reboot -f #{k}")
    except GuestError as e:
        r.check("guest came back after reboot -f", False, str(e))
    a2.sigkill()
    r.figure("boot_s", "/".join(str(x) for x in boots))
    r.figure("cycles", len(boots))
    if len(samples) >= 3:
        fds = [s["fds"] for s in samples]
        r.check("open fds do not grow across resets (first boot is the warm-up)",
                max(fds[1:]) <= fds[0], f"fds after each boot {fds}")
    check_alive(r, d)
    check_clean_stop(r, d)


def _restart_qemu(ctx: Context, r: ScenarioResult, qemu_server: bool):
    wd = ctx.scenario_dir(r.name)
    s1, s2, ports = two_ports(wd, "client" if qemu_server else "server")
    d = ctx.daemon(wd, ports)
    qemu_kw = {"server": True} if qemu_server else {"reconnect": 1}
    b = _peer(ctx, wd, s2, **qemu_kw)
    if qemu_server:
        b.start()
        b.wait_socket()
        d.start()
    else:
        d.start()
        b.start()
    samples, boots, rtts = [], [], []
    cycles = ctx.cycles + 1  # the first one is the warm-up
    for c in range(cycles):
        a = ctx.guest(wd, s1, f"vm1-c{c}", mac=mac(1), ip=f"{NET}.1/24", peer=f"{NET}.2",
                      run=["wait-peer,_,90", "ping,_,5,0.2", "serve"],
                      server=qemu_server)
        a.start()
        try:
            res = wait_result(a, "ping", d, 150)
        except GuestError as e:
            r.check(f"cycle {c}: guest pinged its peer", False, str(e))
            a.sigkill()
            break
        check_ping(r, res, f"cycle {c}")
        boots.append(a.boot_time())
        rtts.append(res.get("rtt_avg_ms"))
        n = disconnects(d, "vm1")
        a.sigkill()  # no orderly vhost-user teardown
        how = wait_frontend_gone(d, "vm1", n)
        if not how.startswith(("control", "log")):
            r.check(f"cycle {c}: daemon noticed QEMU's death", False, how)
        samples.append(d.settled_resources())
        r.say(f"cycle {c}{' (warm-up)' if c == 0 else ''}: killed QEMU, daemon saw it ({how}); "
              + resources_line(samples[-1]))
    r.figure("cycles", f"{len(samples)} (1 warm-up)")
    r.figure("boot_s", "/".join(str(x) for x in boots))
    r.figure("rtt_avg_ms", "/".join(str(x) for x in rtts))
    _no_growth(r, samples, "after each SIGKILL of QEMU")
    # vm2 stayed connected throughout and must still be served.
    check_port_states(r, d, ["vm2"], "running", "peer port")
    check_alive(r, d)
    check_clean_stop(r, d)


def run_qemu_restart(ctx: Context, r: ScenarioResult):
    _restart_qemu(ctx, r, qemu_server=False)


def run_qemu_restart_server(ctx: Context, r: ScenarioResult):
    _restart_qemu(ctx, r, qemu_server=True)


def _restart_daemon(ctx: Context, r: ScenarioResult, qemu_server: bool):
    wd = ctx.scenario_dir(r.name)
    s1, s2, ports = two_ports(wd, "client" if qemu_server else "server")
    d = ctx.daemon(wd, ports)
    qemu_kw = {"server": True} if qemu_server else {"reconnect": 1}
    a = ctx.guest(wd, s1, "vm1", mac=mac(1), ip=f"{NET}.1/24", peer=f"{NET}.2",
                  cmd=PING_LOOP, **qemu_kw)
    b = _peer(ctx, wd, s2, **qemu_kw)
    if not qemu_server:
        d.start()
    a.start()
    b.start()
    if qemu_server:
        a.wait_socket()
        b.wait_socket()
        d.start()
    try:
        first = wait_result(a, "ping", d, 150)
    except GuestError as e:
        r.check("guest pings its peer before any restart", False, str(e))
        return
    check_ping(r, first, "before restart", "rtt_ms")
    r.figure("boot_s", f"{a.boot_time()}/{b.boot_time()}")
    recoveries = []
    for k in (1, 2):
        d.kill()
        r.say(f"restart #{k}: xdpvhostd killed with SIGKILL; QEMUs keep running")
        idx_kill = len(a.lines())
        time.sleep(2.0)
        outage = first_result_after(a, "ping", idx_kill, lambda x: x.get("rc") != 0)
        d.start()
        t0 = time.monotonic()
        idx_start = len(a.lines())
        found = None
        while time.monotonic() - t0 < 120 and a.alive() and d.alive():
            found = first_result_after(a, "ping", idx_start, lambda x: x.get("rc") == 0)
            if found:
                break
            time.sleep(0.2)
        if not found:
            r.check(f"restart #{k}: traffic resumes with no manual step", False,
                    f"no loss-free ping within 120 s of the restart\n--- daemon log ---\n"
                    f"{d.tail(20, this_run=True)}\n--- vm1 console ---\n{a.tail(15)}")
            break
        rec = round(time.monotonic() - t0, 1)
        recoveries.append(rec)
        r.check(f"restart #{k}: traffic resumes with no manual step", True,
                f"loss-free ping {rec} s after the restart (rtt avg {found[1].get('rtt_avg_ms')} ms)"
                + ("; pings failed while it was down" if outage else ""))
        check_port_states(r, d, ["vm1", "vm2"], "running", f"restart #{k}")
    r.figure("recovery_s", "/".join(map(str, recoveries)))
    res = d.resources()
    r.figure("fds", res["fds"])
    r.figure("rss_kb", res["rss_kb"])
    check_alive(r, d)
    check_clean_stop(r, d)


def run_daemon_restart_client(ctx: Context, r: ScenarioResult):
    _restart_daemon(ctx, r, qemu_server=True)


def run_daemon_restart_server(ctx: Context, r: ScenarioResult):
    _restart_daemon(ctx, r, qemu_server=False)
