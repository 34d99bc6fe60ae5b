"""The measurements. Each returns a result dict; CPU is taken from the
cgroups (backend, guest, load = the peer-namespace source/client) over
exactly the measured window."""

import time

from . import cpu_account
from .backends import Unavailable
from .load_tools import paced_send, icmp_rr


def set_mode(ep, mode, size=None, peer=None):
    """stop, then (unless mode is 'stop') set the forwarding mode and start."""
    ep.command("stop")
    if mode == "stop":
        return
    ep.command(f"set fwd {mode}")
    if mode == "txonly":
        ep.command(f"set txpkts {size}")
        ep.command(f"set eth-peer 0 {peer}")
    ep.command("start")


def cpu_snap(ctx):
    return {name: g.read() for name, g in ctx.groups.items()}


def cpu_delta(a, b):
    return {name: cpu_account.delta(a[name], b[name]) for name in a}


def per_unit(cpu, units):
    """ns of each group's CPU per unit (packet or transaction)."""
    if not units:
        return {name: None for name in cpu}
    return {name: round(d["cpu_ns"] / units, 1) for name, d in cpu.items()}


def backend_counters(sut):
    try:
        return sut.stats()
    except Exception as e:  # noqa: BLE001 - counters are informative only
        return {"error": str(e)}


def counter_delta(a, b):
    """b - a for every numeric leaf both have (lists and strings dropped), zeros left out."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = {}
        for k in b:
            if k in a and k != "t":
                d = counter_delta(a[k], b[k])
                if d not in (None, 0, {}):
                    out[k] = d
        return out
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return b - a
    return None


def counters_snap(ctx, sut):
    return {"backend": backend_counters(sut), "veth": ctx.topo.ethtool_stats()}


# --- probe -------------------------------------------------------------------

def probe(ctx, sut):
    """Does the backend pass traffic at all, each way? A backend that takes
    the configuration but forwards nothing is unavailable, not slow."""
    ep, cfg = sut.endpoint, ctx.cfg
    ctx.counter.set_action("drop")
    set_mode(ep, "txonly", 64, ctx.topo.peer_mac)
    time.sleep(0.1)
    c0 = ctx.counter.read()
    time.sleep(cfg.probe_s)
    c1 = ctx.counter.read()
    set_mode(ep, "rxonly")
    s0 = ep.port_stats()
    sent = paced_send(ctx.tools, 10_000, 0.2, 64, cfg.backend_cpu)
    time.sleep(cfg.settle_s)
    s1 = ep.port_stats()
    set_mode(ep, "stop")
    return {"g2o_frames": c1["packets"] - c0["packets"], "o2g_sent": sent["sent"],
            "o2g_delivered": s1["rx"] - s0["rx"]}


# --- guest -> outside ----------------------------------------------------------

def guest_to_outside(ctx, sut, size, seconds=None):
    ep, cfg = sut.endpoint, ctx.cfg
    seconds = seconds or cfg.g2o_s
    ctx.counter.set_action("drop")
    set_mode(ep, "txonly", size, ctx.topo.peer_mac)
    time.sleep(cfg.warmup_s)
    k0 = counters_snap(ctx, sut)
    g0, x0, c0 = ep.port_stats(), ctx.counter.read(), cpu_snap(ctx)
    time.sleep(seconds)
    c1, x1, g1 = cpu_snap(ctx), ctx.counter.read(), ep.port_stats()
    k1 = counters_snap(ctx, sut)
    set_mode(ep, "stop")
    dt = (x1["t_ns"] - x0["t_ns"]) / 1e9
    packets = x1["packets"] - x0["packets"]
    cpu = cpu_delta(c0, c1)
    return {"pps": round(packets / dt), "mbps": round((x1["bytes"] - x0["bytes"]) * 8 / dt / 1e6, 1),
            "packets": packets, "window_s": round(dt, 4),
            "offered_pps": round((g1["tx"] - g0["tx"]) / (g1["t"] - g0["t"])),
            "cpu": cpu, "ns_per_packet": per_unit(cpu, packets),
            "sender_counters": counter_delta(g0, g1), "counters": counter_delta(k0, k1),
            "counted_by": f"XDP counter on the peer veth ({ctx.counter.mode} mode)"}


# --- outside -> guest ----------------------------------------------------------

def paced_trial(ctx, sut, rate, size, seconds):
    ep, cfg = sut.endpoint, ctx.cfg
    k0 = counters_snap(ctx, sut)
    s0, c0 = ep.port_stats(), cpu_snap(ctx)
    sent = paced_send(ctx.tools, rate, seconds, size, cfg.backend_cpu, cgroup=ctx.groups["load"])
    c1 = cpu_snap(ctx)
    time.sleep(cfg.settle_s)
    s1 = ep.port_stats()
    k1 = counters_snap(ctx, sut)
    delivered = s1["rx"] - s0["rx"]
    loss = 1 - delivered / sent["sent"] if sent["sent"] else 1.0
    keeps_up = sent["achieved_pps"] >= 0.98 * rate
    cpu = cpu_delta(c0, c1)
    return {"offered_pps": round(rate), "sent": sent["sent"], "delivered": delivered,
            "loss": round(max(loss, 0.0), 6), "achieved_pps": sent["achieved_pps"],
            "delivered_pps": round(delivered / sent["elapsed_s"]), "burst": sent["burst"],
            "late_bursts": sent["late_bursts"], "source_keeps_up": keeps_up,
            "pass": loss <= cfg.loss_limit and keeps_up,
            "receiver_counters": counter_delta(s0, s1), "counters": counter_delta(k0, k1),
            "cpu": cpu, "ns_per_packet": per_unit(cpu, delivered)}


def outside_to_guest(ctx, sut, size, hint=None):
    """Highest paced rate with loss <= loss_limit: doubling until a trial
    fails, then bisection down to the profile's precision."""
    cfg = ctx.cfg
    set_mode(sut.endpoint, "rxonly")
    time.sleep(0.1)
    rate = hint * 0.95 if hint else cfg.o2g_start_pps
    best, fail, trials = None, None, []
    for _ in range(cfg.o2g_max_trials):
        t = paced_trial(ctx, sut, rate, size, cfg.o2g_trial_s)
        trials.append(t)
        if t["pass"]:
            if best is None or t["offered_pps"] > best["offered_pps"]:
                best = t
            nxt = (rate + fail) / 2 if fail else min(rate * 2, cfg.o2g_max_pps)
        else:
            fail = rate if fail is None else min(fail, rate)
            nxt = (rate + best["offered_pps"]) / 2 if best else rate / 2
        if best and fail and (fail - best["offered_pps"]) / fail <= cfg.o2g_precision:
            break
        if best and nxt >= cfg.o2g_max_pps and rate >= cfg.o2g_max_pps:
            break
        rate = nxt
    set_mode(sut.endpoint, "stop")
    res = {"pps": best["delivered_pps"] if best else 0,
           "offered_pps": best["offered_pps"] if best else None,
           "loss": best["loss"] if best else None,
           "lowest_failing_pps": round(fail) if fail else None,
           "loss_limit": cfg.loss_limit, "trials": trials,
           "cpu": best["cpu"] if best else None,
           "ns_per_packet": best["ns_per_packet"] if best else None}
    if best is None:
        res["note"] = "no trial passed (every tried rate lost more than the limit)"
    return res


def fixed_rate(ctx, sut, rate, size, seconds):
    set_mode(sut.endpoint, "rxonly")
    time.sleep(0.1)
    t = paced_trial(ctx, sut, rate, size, seconds)
    set_mode(sut.endpoint, "stop")
    return t


# --- request/response, light load, idle ---------------------------------------

def request_response(ctx, sut, seconds, interval_us=0):
    cfg = ctx.cfg
    ctx.counter.set_action("pass")
    set_mode(sut.endpoint, "icmpecho")
    time.sleep(0.1)
    try:
        c0 = cpu_snap(ctx)
        res = icmp_rr(ctx.tools, seconds, cfg.backend_cpu, interval_us=interval_us,
                      warmup=cfg.rr_warmup if interval_us == 0 else 20, cgroup=ctx.groups["load"],
                      sched=cfg.client_sched)
        c1 = cpu_snap(ctx)
    finally:
        set_mode(sut.endpoint, "stop")
        ctx.counter.set_action("drop")
    if res.get("received", 0) == 0:
        raise Unavailable(f"no ICMP echo reply came back ({res})")
    # cpu over the client's whole run (warm-up included); per transaction it is
    # scaled by the transactions of that run.
    cpu = cpu_delta(c0, c1)
    wall = cpu["backend"]["wall_s"]
    txn_total = res["transactions_per_s"] * wall if wall else None
    res["cpu"] = cpu
    res["ns_per_transaction"] = per_unit(cpu, txn_total) if txn_total else None
    return res


def idle(ctx, sut, seconds):
    set_mode(sut.endpoint, "rxonly")
    time.sleep(0.3)
    c0 = cpu_snap(ctx)
    time.sleep(seconds)
    c1 = cpu_snap(ctx)
    set_mode(sut.endpoint, "stop")
    return {"cpu": cpu_delta(c0, c1)}
