"""Checks and figures built from guest result lines (tests/guest protocol) and
from the daemon (process, log, control socket). Each helper records its
checks on a ScenarioResult and returns what it measured. A check built on
the control socket is skipped (and says so) when the socket does not answer."""

from __future__ import annotations

import re
import time

from scenario_result import ScenarioResult
from xvtest.control import ControlUnavailable, RpcError
from xvtest.daemon import Daemon
from xvtest.guest import Guest, GuestError, GuestTimeout, iperf3_summary, parse_result

# Segmentation offload both ways: the daemon takes TSO frames from guests
# and hands them whole to guests that take them (or segments them in software).
TSO_FEATURES = ("HOST_TSO4", "HOST_TSO6", "HOST_ECN", "GUEST_TSO4", "GUEST_TSO6", "GUEST_ECN")
# Never offered: UFO would need IP fragmentation.
NEVER_FEATURES = ("HOST_UFO", "GUEST_UFO")


def rtt(res: dict) -> str:
    return f"{res.get('rtt_min_ms')}/{res.get('rtt_avg_ms')}/{res.get('rtt_max_ms')}"


def check_ping(r: ScenarioResult, res: dict | None, label: str, figure: str | None = None) -> bool:
    if res is None:
        return r.check(f"{label}: ping", False, "no ping result")
    ok = res.get("rc") == 0 and res.get("tx", 0) > 0 and res.get("rx") == res.get("tx")
    r.check(f"{label}: ping {res.get('peer')} no loss", ok,
            f"{res.get('rx')}/{res.get('tx')} answered, rtt min/avg/max {rtt(res)} ms")
    if figure:
        r.figure(figure, rtt(res))
    return ok


def check_iperf(r: ScenarioResult, res: dict | None, label: str,
                mbps_figure: str | None = None, retrans_figure: str | None = None,
                max_udp_loss: float | None = None) -> dict:
    if res is None:
        r.check(f"{label}: iperf3", False, "no iperf3 result")
        return {}
    s = iperf3_summary(res)
    if "error" in s:
        r.check(f"{label}: iperf3", False, s["error"])
        return s
    if "mbps" in s:  # UDP
        ok = res.get("rc") == 0 and s["mbps"] > 0
        r.check(f"{label}: iperf3 UDP", ok,
                f"{s['mbps']} Mbit/s, loss {s.get('lost_percent')}%, jitter {s.get('jitter_ms')} ms")
        if max_udp_loss is not None and s.get("lost_percent") is not None:
            r.check(f"{label}: UDP loss <= {max_udp_loss}%", s["lost_percent"] <= max_udp_loss,
                    f"{s['lost_percent']:.2f}%")
        if mbps_figure:
            r.figure(mbps_figure, s["mbps"])
            r.figure("udp_loss_pct", round(s.get("lost_percent") or 0, 2))
        return s
    ok = res.get("rc") == 0 and s.get("received_mbps", 0) > 0
    r.check(f"{label}: iperf3 TCP", ok,
            f"sent {s.get('sent_mbps')} / received {s.get('received_mbps')} Mbit/s, "
            f"{s.get('retransmits')} retransmits")
    if mbps_figure:
        r.figure(mbps_figure, s.get("received_mbps"))
    if retrans_figure:
        r.figure(retrans_figure, s.get("retransmits"))
    return s


def check_features(r: ScenarioResult, g: Guest, label: str, present=(), absent=()) -> list[str]:
    nic = g.results("nic")
    if not nic:
        r.check(f"{label}: negotiated features", False, "no nic result")
        return []
    names = nic[-1]["feature_names"]
    for f in present:
        r.check(f"{label}: {f} negotiated", f in names)
    for f in absent:
        r.check(f"{label}: {f} not negotiated", f not in names)
    return names


# The feature bits QEMU negotiates with a vhost-user net backend (its
# user_feature_bits); the others (CTRL_VQ, MAC, STATUS, MQ, ...) QEMU emulates
# itself and never forwards.
BACKEND_FEATURE_BITS = (0, 1, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 24, 27, 28, 29, 32, 33, 34)
BACKEND_FEATURE_MASK = sum(1 << b for b in BACKEND_FEATURE_BITS)


def check_control_features(r: ScenarioResult, d: Daemon, port: str, g: Guest, label: str):
    """port.get features (negotiated, as the daemon has them) against the
    guest's own view, on the bits QEMU forwards to a vhost-user backend."""
    nic = g.results("nic")
    name = f"{label}: daemon's negotiated features match the guest's"
    try:
        detail = d.call("port.get", name=port)
    except (ControlUnavailable, RpcError) as e:
        r.skip(name, f"control socket: {e}")
        return
    if not nic:
        return
    guest_bits = int(nic[-1]["features_hex"], 16) & BACKEND_FEATURE_MASK
    daemon_bits = int(detail.get("features", "0x0"), 16) & BACKEND_FEATURE_MASK
    r.check(name, guest_bits == daemon_bits,
            f"daemon {detail.get('features')} guest {nic[-1]['features_hex']} "
            f"(compared on mask 0x{BACKEND_FEATURE_MASK:x})")


class DaemonDied(GuestError):
    """xdpvhostd exited while a guest was waited for."""


def death_note(d: Daemon) -> str:
    why = f"xdpvhostd exited (rc={d.returncode})"
    if d.log_lines(r"signal 15: shutting down", this_run=True):
        why += (" after a SIGTERM the suite did not send (another process on this machine "
                "signalled it)")
    return f"{why}:\n{d.tail(15, this_run=True)}"


def _waiting(g: Guest, d: Daemon | None, timeout: float, step):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return step(min(2.0, max(0.1, deadline - time.monotonic())))
        except GuestTimeout:
            if d is not None and not d.alive() and not d.expect_exit:
                raise DaemonDied(f"{g.name}: {death_note(d)}") from None
            if time.monotonic() >= deadline:
                raise


def wait_result(g: Guest, kind: str, d: Daemon | None, timeout: float, since: int = 0) -> dict:
    """Guest.wait_result that gives up early when the daemon died."""
    return _waiting(g, d, timeout, lambda t: g.wait_result(kind, timeout=t, since=since))


def wait_booted(g: Guest, d: Daemon | None, timeout: float, since: int = 0) -> float:
    return _waiting(g, d, timeout, lambda t: g.wait_booted(timeout=t, since=since))


def wait_done(r: ScenarioResult, g: Guest, timeout: float, d: Daemon | None = None) -> int | None:
    """The guest's rc, or None (recorded as a failed check) if it did not
    finish its steps in time, QEMU died first, or the daemon died."""
    try:
        _waiting(g, d, timeout, lambda t: g.wait_for(r"^XV-DONE rc=", timeout=t))
        return g.wait_done(15)
    except GuestError as e:
        r.check(f"{g.name}: finished its steps", False, str(e))
        g.kill()
        return None


def check_alive(r: ScenarioResult, d: Daemon, label: str = "xdpvhostd"):
    r.check(f"{label} still running", d.alive(), "" if d.alive() else death_note(d))


def check_clean_stop(r: ScenarioResult, d: Daemon, label: str = "xdpvhostd"):
    """SIGTERM must end the daemon with rc 0 within 10 s; its warnings and
    errors (all runs of this scenario) become notes."""
    if d.alive():
        try:
            rc = d.stop(timeout=10.0)
            r.check(f"{label} exits 0 on SIGTERM", rc == 0, f"rc={rc}")
        except TimeoutError as e:
            r.check(f"{label} exits 0 on SIGTERM", False, str(e).splitlines()[0])
    problems = d.problems()
    if problems:
        r.note(f"{label} logged {len(problems)} warning/error line(s), first: "
               + " | ".join(problems[:3]))


def port_state(d: Daemon, name: str) -> str | None:
    """The port's state, None when the control socket does not tell."""
    try:
        return d.port_state(name)
    except (ControlUnavailable, RpcError):
        return None


def wait_port_state(d: Daemon, name: str, states, timeout: float = 20.0) -> str | None:
    """Polls port.get until the port's state is one of states; returns the
    last state seen (None if the socket never answered)."""
    if isinstance(states, str):
        states = (states,)
    deadline = time.monotonic() + timeout
    while True:
        last = port_state(d, name)
        if last in states or time.monotonic() >= deadline:
            return last
        time.sleep(0.1)


def disconnects(d: Daemon, port: str) -> int:
    """How often this run of the daemon logged that the port's frontend left."""
    return len(d.log_lines(rf"port {re.escape(port)}: frontend disconnected", this_run=True))


def wait_frontend_gone(d: Daemon, port: str, disconnects_before: int, timeout: float = 20.0) -> str:
    """After a frontend went away: waits until the daemon saw it (port state
    waiting over the control socket, else one more 'frontend disconnected'
    log line for the port). Returns how it knew."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = port_state(d, port)
        if state == "waiting":
            return "control: state waiting"
        if state is None and disconnects(d, port) > disconnects_before:
            time.sleep(0.5)  # give the teardown a moment after the log line
            return "log: frontend disconnected"
        time.sleep(0.1)
    return f"not seen within {timeout:.0f}s (state {port_state(d, port)})"


def check_port_states(r: ScenarioResult, d: Daemon, ports, want: str, label: str,
                      timeout: float = 15.0) -> bool:
    if not d.answers():
        r.skip(f"{label}: ports {', '.join(ports)} {want}", "control socket does not answer")
        return True
    ok = True
    for p in ports:
        st = wait_port_state(d, p, want, timeout)
        ok &= r.check(f"{label}: port {p} state {want}", st == want, f"state {st}")
    return ok


def check_counters(r: ScenarioResult, d: Daemon, ports, label: str) -> dict:
    """stats.get: each port moved frames both ways; drop reasons reported."""
    try:
        stats = d.call("stats.get")
    except (ControlUnavailable, RpcError) as e:
        r.skip(f"{label}: port counters", f"control socket: {e}")
        return {}
    out = {}
    for p in ports:
        s = stats.get("ports", {}).get(p)
        if s is None:
            r.check(f"{label}: port {p} counters", False, "port missing in stats.get")
            continue
        r.check(f"{label}: port {p} counted frames both ways",
                s.get("rx_packets", 0) > 0 and s.get("tx_packets", 0) > 0,
                f"rx {s.get('rx_packets')} pkts / tx {s.get('tx_packets')} pkts")
        drops = {k: v for k, v in (s.get("drops") or {}).items() if v}
        if drops:
            r.note(f"port {p} drops: {drops}")
        out[p] = s
    return out


def offload_counters(stats: dict) -> dict:
    """The offload counters of one port's or uplink's stats.get entry that are
    not zero (GSO in/out, segments made, software checksums, GRO, refusals)."""
    keys = ("gso_rx", "gso_tx", "gso_segments", "csum_software", "csum_offloaded",
            "gro_frames", "gro_segments")
    out = {k: stats.get(k) for k in keys if stats.get(k)}
    refused = {k: v for k, v in (stats.get("offload_refused") or {}).items() if v}
    if refused:
        out["offload_refused"] = refused
    return out


def check_offload(r: ScenarioResult, counters: dict, label: str, want: dict[str, bool]):
    """want: counter -> True (must have counted) / False (must stay 0). A
    guest's refused offload requests always fail the check."""
    for key, nonzero in want.items():
        v = counters.get(key) or 0
        r.check(f"{label}: {key} {'> 0' if nonzero else '= 0'}", (v > 0) == nonzero, str(v))
    refused = {k: v for k, v in (counters.get("offload_refused") or {}).items() if v}
    r.check(f"{label}: no offload request refused", not refused, str(refused or 0))


def check_transfer(r: ScenarioResult, served: dict | None, got: dict | None, label: str,
                   figure: str | None = None) -> bool:
    """An http-serve result (or {"bytes", "sha256"} of the peer's file) against
    the http-get result at the other end: the same bytes arrived."""
    if not served or not got:
        return r.check(f"{label}: transfer", False,
                       f"served {bool(served)}, fetched {bool(got)}")
    ok = (got.get("rc") == 0 and got.get("bytes") == served.get("bytes") and
          got.get("sha256") == served.get("sha256"))
    secs = got.get("seconds") or 0
    mbps = round(8 * (got.get("bytes") or 0) / secs / 1e6, 1) if secs else None
    r.check(f"{label}: {served.get('bytes')} bytes arrived with the same sha256", ok,
            f"got {got.get('bytes')} bytes sha256 {str(got.get('sha256'))[:16]}... "
            f"(sent {str(served.get('sha256'))[:16]}...) in {secs} s, ~{mbps} Mbit/s")
    if figure:
        r.figure(figure, mbps)
    return ok


def resources_line(res: dict) -> str:
    return (f"fds {res.get('fds')} {res.get('fd_kinds')}, VmRSS {res.get('rss_kb')} KiB "
            f"(anon {res.get('anon_kb')}, shmem {res.get('shmem_kb')}), "
            f"VmSize {res.get('vsz_kb')} KiB, memfd maps {res.get('memfd_maps')}")


def first_result_after(g: Guest, kind: str, since: int, pred=None) -> tuple[int, dict] | None:
    """(line index, result) of the first XV-RESULT of kind at line >= since
    (matching pred), or None."""
    lines = g.lines()
    for i in range(since, len(lines)):
        if lines[i].startswith("XV-RESULT "):
            res = parse_result(lines[i])
            if res.get("kind") == kind and (pred is None or pred(res)):
                return i, res
    return None
