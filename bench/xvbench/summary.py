"""The Markdown summary: medians over repetitions per backend, each backend
as a fraction of the bare AF_XDP loop, xdpvhostd/DPDK as the median of
per-pair ratios (repetition r of one against repetition r of the other),
sweep tables, and the issue's targets."""

import os
import statistics

from . import tcp_guests

BACKENDS = ("afxdp", "dpdk", "dpdk-bp", "xdpvhostd")
TITLES = {"afxdp": "bare AF_XDP", "dpdk": "DPDK (busy_budget=0)", "dpdk-bp": "DPDK (pref. busy poll)",
          "xdpvhostd": "xdpvhostd"}


def dig(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d or d[p] is None:
            return None
        d = d[p]
    return d


def kernel_share(res):
    """sys / (user + sys): cpuacct's user/sys split is tick-sampled, its
    total is exact, so the share is taken from the split alone."""
    c = dig(res, "cpu", "backend")
    if not c or not (c.get("user_ns", 0) + c.get("sys_ns", 0)):
        return None
    return c["sys_ns"] / (c["user_ns"] + c["sys_ns"])


def fmt_pps(v):
    if v == 0:
        return "0 (no rate passed)"
    return f"{v / 1e6:.2f} M" if v >= 1e6 else f"{v / 1e3:.0f} k"


def fmt_us(v):
    return f"{v:.1f} µs"


def fmt_pct(v):
    return f"{v * 100:.1f}%"


def fmt_ns(v):
    return f"{v:,.0f} ns"


def fmt_num(v):
    return f"{v:,.0f}"


# (label, scenario, params match, extractor, formatter, better, bare comparison scenario)
def metric_rows(sizes):
    rows = []
    for s in sizes:
        m = {"size": s}
        rows += [
            (f"guest→outside {s} B: pps", "guest_to_outside", m, lambda r: r.get("pps"), fmt_pps, "higher", True),
            (f"guest→outside {s} B: backend ns/packet", "guest_to_outside", m,
             lambda r: dig(r, "ns_per_packet", "backend"), fmt_ns, "lower", False),
            (f"guest→outside {s} B: backend kernel share", "guest_to_outside", m, kernel_share, fmt_pct, None,
             False),
        ]
    for s in sizes:
        m = {"size": s}
        rows += [
            (f"outside→guest {s} B: pps at ≤0.5% loss", "outside_to_guest", m, lambda r: r.get("pps"), fmt_pps,
             "higher", True),
            (f"outside→guest {s} B: backend ns/packet", "outside_to_guest", m,
             lambda r: dig(r, "ns_per_packet", "backend"), fmt_ns, "lower", False),
        ]
    rr = {"interval_us": 0}
    rows += [
        ("request/response: RTT p50", "request_response", rr, lambda r: dig(r, "rtt_us", "p50"), fmt_us, "lower",
         True),
        ("request/response: RTT p90", "request_response", rr, lambda r: dig(r, "rtt_us", "p90"), fmt_us, "lower",
         True),
        ("request/response: RTT p99", "request_response", rr, lambda r: dig(r, "rtt_us", "p99"), fmt_us, "lower",
         True),
        ("request/response: transactions/s", "request_response", rr, lambda r: r.get("transactions_per_s"),
         fmt_num, "higher", True),
        ("request/response: backend CPU (of a core)", "request_response", rr,
         lambda r: dig(r, "cpu", "backend", "core_fraction"), fmt_pct, "lower", False),
        ("request/response: backend ns/transaction", "request_response", rr,
         lambda r: dig(r, "ns_per_transaction", "backend"), fmt_ns, "lower", False),
    ]
    ll = {"interval_us": 1000}
    rows += [
        ("light load (1 req/ms): RTT p50", "light_load", ll, lambda r: dig(r, "rtt_us", "p50"), fmt_us, "lower",
         True),
        ("light load (1 req/ms): RTT p99", "light_load", ll, lambda r: dig(r, "rtt_us", "p99"), fmt_us, "lower",
         True),
        ("light load (1 req/ms): backend CPU", "light_load", ll, lambda r: dig(r, "cpu", "backend", "core_fraction"),
         fmt_pct, "lower", False),
        ("idle: backend CPU", "idle", {}, lambda r: dig(r, "cpu", "backend", "core_fraction"), fmt_pct, "lower",
         False),
    ]
    return rows


def matches(rec, scenario, params):
    return rec.get("scenario") == scenario and all(rec.get("params", {}).get(k) == v for k, v in params.items())


def by_rep(records, backend, scenario, params, fn):
    """{rep: value} of ok records; plus the statuses seen."""
    vals, statuses, reasons = {}, set(), []
    for r in records:
        if r.get("backend") != backend or not matches(r, scenario, params):
            continue
        statuses.add(r["status"])
        if r["status"] == "ok":
            try:
                v = fn(r["result"])
            except (KeyError, TypeError, ZeroDivisionError):
                v = None
            if v is not None:
                vals[r["rep"]] = v
        elif r.get("error"):
            reasons.append(r["error"])
    return vals, statuses, reasons


def median(vals):
    return statistics.median(vals) if vals else None


def cell(vals, statuses, fmt):
    if vals:
        v = median(list(vals.values()))
        return fmt(v) + (f" (n={len(vals)})" if len(vals) != 1 else " (n=1)")
    if "unavailable" in statuses:
        return "unavailable"
    if "error" in statuses:
        return "error"
    return "–"


def pair_ratio(a, b):
    """Median over repetitions present in both of a[r] / b[r]."""
    ratios = [a[r] / b[r] for r in a if r in b and b[r]]
    return (median(ratios), len(ratios)) if ratios else (None, 0)


def fmt_ratio(v, n=None):
    if v is None:
        return "–"
    return f"{v:.2f}×" + (f" (n={n})" if n else "")


def one_line(scen, res):
    if scen == "noisy_neighbour":
        return (f"{res['attack']}: {fmt_pps(res['pps_without'] or 0)}pps without, "
                f"{fmt_pps(res['pps_with'] or 0)}pps with the hostile guest, ratio "
                f"{fmt_ratio(res['ratio'], len(res['pair_ratios']))}, backend ns/packet "
                f"{fmt_ratio(res.get('backend_ns_per_packet_ratio'))}")
    if scen in ("guest_to_outside",) or (scen == "sweep_signal_batch" and "pps" in res and "offered_pps" in res
                                         and "trials" not in res and "window_s" in res):
        return (f"{fmt_pps(res['pps'])}pps, backend {fmt_ns(dig(res, 'ns_per_packet', 'backend') or 0)}/pkt, "
                f"{fmt_pct(dig(res, 'cpu', 'backend', 'core_fraction') or 0)} of a core")
    if scen == "outside_to_guest":
        rate = f"{fmt_pps(res['pps'])}pps" if res["pps"] else "no rate passed"
        return (f"{rate} at ≤{res['loss_limit'] * 100:.1f}% loss "
                f"(first failing {fmt_pps(res['lowest_failing_pps']) if res.get('lowest_failing_pps') else '–'}, "
                f"{len(res['trials'])} trials)")
    if "rtt_us" in res:
        return (f"RTT p50 {res['rtt_us']['p50']:.1f} p99 {res['rtt_us']['p99']:.1f} µs, "
                f"{res['transactions_per_s']:.0f} t/s, lost {res['lost']}, backend "
                f"{fmt_pct(dig(res, 'cpu', 'backend', 'core_fraction') or 0)}")
    if "delivered" in res:
        return (f"offered {fmt_pps(res['offered_pps'])}, delivered {res['delivered']}/{res['sent']} "
                f"(loss {res['loss'] * 100:.2f}%), backend {fmt_ns(dig(res, 'ns_per_packet', 'backend') or 0)}/pkt")
    if scen == "idle":
        return f"backend {fmt_pct(dig(res, 'cpu', 'backend', 'core_fraction') or 0)} of a core"
    return ""


def main_table(records, sizes):
    lines = ["| metric | " + " | ".join(TITLES[b] for b in BACKENDS) +
             " | xdpvhostd / DPDK (per-pair) | DPDK / bare | xdpvhostd / bare |",
             "|---|" + "---|" * (len(BACKENDS) + 3)]
    for label, scen, params, fn, fmt, better, vs_bare in metric_rows(sizes):
        vals = {b: by_rep(records, b, scen, params, fn) for b in BACKENDS}
        cells = [cell(*vals[b][:2], fmt) for b in BACKENDS]
        ratio, n = pair_ratio(vals["xdpvhostd"][0], vals["dpdk"][0])
        bare = median(list(vals["afxdp"][0].values()))
        fr = []
        for b in ("dpdk", "xdpvhostd"):
            mine = median(list(vals[b][0].values()))
            fr.append(fmt_ratio(mine / bare) if vs_bare and mine is not None and bare else "–")
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {fmt_ratio(ratio, n)} | {fr[0]} | {fr[1]} |")
    return "\n".join(lines)


def sweep_table(records, scenario, key, loads, columns):
    """Rows: sweep values; columns: (title, load, extractor, fmt)."""
    values = sorted({r["params"][key] for r in records if r.get("scenario") == scenario and key in r["params"]},
                    key=lambda v: (isinstance(v, bool), v))
    if not values:
        return None
    lines = [f"| {key} | " + " | ".join(c[0] for c in columns) + " |", "|---|" + "---|" * len(columns)]
    for v in values:
        row = []
        for title, load, fn, fmt in columns:
            vals, statuses, _ = by_rep(records, "xdpvhostd", scenario, {key: v, "load": load}, fn)
            row.append(cell(vals, statuses, fmt))
        lines.append(f"| {v} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def port_counter(name):
    """A daemon port counter's delta over the run (zero deltas are left out of the record)."""
    def get(res):
        port = dig(res, "daemon_counters", "port")
        return None if port is None else port.get(name, 0)
    return get


def sweeps(records):
    out = []
    t = sweep_table(records, "sweep_busy_poll", "busy_poll_us", None, [
        ("RR t/s", "request_response", lambda r: r.get("transactions_per_s"), fmt_num),
        ("RR p50", "request_response", lambda r: dig(r, "rtt_us", "p50"), fmt_us),
        ("RR p99", "request_response", lambda r: dig(r, "rtt_us", "p99"), fmt_us),
        ("RR backend CPU", "request_response", lambda r: dig(r, "cpu", "backend", "core_fraction"), fmt_pct),
        ("light p50", "light_load", lambda r: dig(r, "rtt_us", "p50"), fmt_us),
        ("light p99", "light_load", lambda r: dig(r, "rtt_us", "p99"), fmt_us),
        ("light backend CPU", "light_load", lambda r: dig(r, "cpu", "backend", "core_fraction"), fmt_pct),
    ])
    if t:
        out += ["### busy_poll_us (busy polling buys request/response rate with CPU)", "", t, ""]
    t = sweep_table(records, "sweep_signal_batch", "signal_batch", None, [
        ("guest RX offered", "outside_to_guest", lambda r: r.get("offered_pps"), fmt_pps),
        ("guest RX delivered", "outside_to_guest", lambda r: r.get("delivered_pps"), fmt_pps),
        ("guest RX loss", "outside_to_guest", lambda r: r.get("loss"), fmt_pct),
        ("guest RX backend ns/pkt", "outside_to_guest", lambda r: dig(r, "ns_per_packet", "backend"), fmt_ns),
        ("guest RX interrupts", "outside_to_guest", port_counter("interrupts"), fmt_num),
        ("suppressed", "outside_to_guest", port_counter("interrupts_suppressed"), fmt_num),
        ("guest TX pps", "guest_to_outside", lambda r: r.get("pps"), fmt_pps),
        ("guest TX backend ns/pkt", "guest_to_outside", lambda r: dig(r, "ns_per_packet", "backend"), fmt_ns),
        ("guest TX interrupts", "guest_to_outside", port_counter("interrupts"), fmt_num),
        ("suppressed", "guest_to_outside", port_counter("interrupts_suppressed"), fmt_num),
    ])
    if t:
        out += ["### signal_batch (used buffers signalled in batches)", "", t, ""]
    t = sweep_table(records, "sweep_napi_busy_poll", "napi_busy_poll", None, [
        ("RR p50", "request_response", lambda r: dig(r, "rtt_us", "p50"), fmt_us),
        ("RR p99", "request_response", lambda r: dig(r, "rtt_us", "p99"), fmt_us),
        ("RR backend CPU", "request_response", lambda r: dig(r, "cpu", "backend", "core_fraction"), fmt_pct),
        ("guest RX loss", "outside_to_guest", lambda r: r.get("loss"), fmt_pct),
        ("guest RX backend ns/pkt", "outside_to_guest", lambda r: dig(r, "ns_per_packet", "backend"), fmt_ns),
    ])
    if t:
        out += ["### napi_busy_poll (busy polling the NIC's NAPI by napi id)", "", t, ""]
        napi = [dig(r, "result", "uplinks") for r in records
                if r.get("scenario") == "sweep_napi_busy_poll" and r["status"] == "ok"]
        napi = [u for u in napi if u]
        if napi:
            q = dig(napi[-1][0], "queues") if isinstance(napi[-1], list) and napi[-1] else None
            if q:
                out += [f"Uplink queue state during the sweep: napi_id {q[0].get('napi_id')}, "
                        f"busy poll {q[0].get('napi_busy_poll')}.", ""]
    return out


def targets(records, sizes):
    """The issue's targets, where this run measured both sides."""
    def med(b, scen, params, fn):
        return median(list(by_rep(records, b, scen, params, fn)[0].values()))

    def pr(scen, params, fn):
        return pair_ratio(by_rep(records, "xdpvhostd", scen, params, fn)[0],
                          by_rep(records, "dpdk", scen, params, fn)[0])[0]
    pps = lambda r: r.get("pps")  # noqa: E731
    p50 = lambda r: dig(r, "rtt_us", "p50")  # noqa: E731
    p99 = lambda r: dig(r, "rtt_us", "p99")  # noqa: E731
    core = lambda r: dig(r, "cpu", "backend", "core_fraction")  # noqa: E731
    s = sizes[0]
    rows = []

    def add(name, value, ok_fn, fmt=fmt_ratio):
        if value is None:
            rows.append(f"| {name} | not measured | – |")
        else:
            rows.append(f"| {name} | {fmt(value)} | {'met' if ok_fn(value) else 'not met'} |")
    add(f"outside→guest {s} B ≥ 1.3× DPDK", pr("outside_to_guest", {"size": s}, pps), lambda v: v >= 1.3)
    x, bare = med("xdpvhostd", "outside_to_guest", {"size": s}, pps), med("afxdp", "outside_to_guest", {"size": s}, pps)
    add(f"outside→guest {s} B ≥ 90% of bare receive", x / bare if x and bare else None, lambda v: v >= 0.9)
    add(f"guest→outside {s} B ≥ 1.0× DPDK", pr("guest_to_outside", {"size": s}, pps), lambda v: v >= 1.0)
    x, bare = med("xdpvhostd", "guest_to_outside", {"size": s}, pps), med("afxdp", "guest_to_outside", {"size": s}, pps)
    add(f"guest→outside {s} B ≥ 95% of bare transmit", x / bare if x and bare else None, lambda v: v >= 0.95)
    add("request/response RTT p50 ≤ 0.8× DPDK", pr("request_response", {"interval_us": 0}, p50), lambda v: v <= 0.8)
    add("request/response RTT p99 ≤ 0.8× DPDK", pr("request_response", {"interval_us": 0}, p99), lambda v: v <= 0.8)
    add("light load p50 ≤ 1.2× DPDK (busy_poll_us 50)", pr("light_load", {"interval_us": 1000}, p50),
        lambda v: v <= 1.2)
    add("light load backend CPU ≤ 10% of a core", med("xdpvhostd", "light_load", {"interval_us": 1000}, core),
        lambda v: v <= 0.10, fmt_pct)
    add("idle backend CPU ≤ 1% of a core", med("xdpvhostd", "idle", {}, core), lambda v: v <= 0.01, fmt_pct)
    return ["| target | this run | |", "|---|---|---|"] + rows


def noisy_neighbour_table(records):
    """Noisy neighbour: the well-behaved guest's guest->outside rate with a hostile
    guest on the same service thread over its rate without, per attack: the
    median of the per-pair ratios pooled over repetitions."""
    recs = [r for r in records if r.get("scenario") == "noisy_neighbour" and r.get("backend") == "xdpvhostd"]
    if not recs:
        return []
    out = ["### Noisy neighbour", "",
           "The well-behaved guest's guest→outside 64 B rate with a hostile guest on a second port of "
           "the same service thread, over its rate without (windows alternating; ratio = median of "
           "per-pair ratios). Target: ≥ 0.90 (a hostile guest costs < 10 %).", "",
           "Backend ns/packet: the backend's CPU per well-behaved packet, with / without (what the attack "
           "costs the service thread, also when other load sets how much CPU the thread gets).", "",
           "| attack | without | with | with / without | pairs | backend ns/packet with / without | "
           "target |", "|---|---|---|---|---|---|---|"]
    attacks = []
    for r in recs:
        a = r["params"].get("attack")
        if a not in attacks:
            attacks.append(a)
    for a in attacks:
        mine = [r for r in recs if r["params"].get("attack") == a]
        ok = [r["result"] for r in mine if r["status"] == "ok"]
        if not ok:
            out.append(f"| {a} | {mine[0]['status']} | | | | | |")
            continue
        ratios = [x for res in ok for x in res["pair_ratios"]]
        wo = median([w["pps"] for res in ok for w in res["windows"] if w["side"] == "without"])
        wi = median([w["pps"] for res in ok for w in res["windows"] if w["side"] == "with"])
        ratio = median(ratios)
        cost = median([x for res in ok for x in res.get("backend_cost_pair_ratios", [])])
        verdict = "–" if ratio is None else ("met" if ratio >= 0.9 else "not met")
        out.append(f"| {a} | {fmt_pps(wo)}pps | {fmt_pps(wi)}pps | {fmt_ratio(ratio)} | {len(ratios)} | "
                   f"{fmt_ratio(cost)} | {verdict} |")
    return out + [""]


def write(out_dir, records, elapsed_s=None, interrupted=False):
    meta = next((r["result"] for r in records if r.get("scenario") == "run"), {})
    sizes = tuple(dig(meta, "profile", "sizes") or (64, 1500))
    loads = [float(r["loadavg_before"][0]) for r in records if r.get("loadavg_before")]
    env = meta.get("environment", {})
    lines = [f"## Benchmark summary — run {records[0]['run_id'] if records else '?'} "
             f"({meta.get('profile', {}).get('name', '?')})", ""]
    if interrupted:
        lines += ["**Interrupted: partial results.**", ""]
    synthetic = [r for r in records if r.get("backend") in BACKENDS
                 and not str(r.get("scenario", "")).startswith("tcp_")]
    tcp_lines = tcp_guests.table(records)
    tcp_meta = meta.get("tcp") or {}
    if not synthetic and tcp_lines:
        lines += [
            f"- machine: {env.get('cpus')} CPUs ({env.get('cpu_model')}), kernel {env.get('kernel')}, "
            f"DPDK {env.get('dpdk')}; vm1's vCPU alone on CPU {meta.get('guest_cpu')}; backend, QEMU I/O "
            f"threads, vm2's vCPU and the peer's iperf3 on CPU {meta.get('backend_cpu')}; all at nice "
            f"{meta.get('nice', 0)}",
            f"- order {' '.join(tcp_meta.get('backends') or [])}, repeated {tcp_meta.get('reps')}× "
            "(scenario order reversed every other repetition)"
            + (f"; measurements took {elapsed_s / 60:.1f} min" if elapsed_s else ""),
            f"- 1-min load average during the run: {min(loads):.2f}–{max(loads):.2f} (other sessions share "
            "the 2 cores)" if loads else "- load: ?",
            f"- CPU accounting: {meta.get('cgroup')}, threads placed one by one; {meta.get('pmu_note')}",
            f"- xdpvhostd: {meta.get('xdpvhostd')}", ""]
    lines += [] if not synthetic and tcp_lines else [
        f"- machine: {env.get('cpus')} CPUs ({env.get('cpu_model')}), kernel {env.get('kernel')}, "
        f"DPDK {env.get('dpdk')}; backend (and source/client, nice -20) on CPU {meta.get('backend_cpu')}, "
        f"guest alone on CPU {meta.get('guest_cpu')}; backend and guest at nice {meta.get('nice', 0)}; "
        f"ICMP client {'SCHED_FIFO' if meta.get('client_sched', 'fifo') == 'fifo' else 'nice -20'}",
        f"- order {' '.join(meta.get('order', []))}, repeated {meta.get('reps')}× (medians; "
        f"xdpvhostd/DPDK = median of per-repetition ratios)"
        + (f"; measurements took {elapsed_s / 60:.1f} min" if elapsed_s else ""),
        f"- 1-min load average during the run: {min(loads):.2f}–{max(loads):.2f}" if loads else "- load: ?",
        f"- CPU accounting: {meta.get('cgroup')}; {meta.get('pmu_note')}",
        f"- guest→outside counted by an XDP program on the peer veth ({meta.get('xdp_counter_mode')} mode); "
        f"outside→guest by the receiving testpmd's port counters",
        "",
        ""]
    if synthetic or not tcp_lines:
        lines += [main_table(records, sizes), ""]
    unavailable = {}
    for r in synthetic:
        if r.get("status") == "unavailable" and r.get("backend") and r["backend"] not in unavailable:
            unavailable[r["backend"]] = r.get("error", "").splitlines()[0] if r.get("error") else ""
    for b, why in unavailable.items():
        lines.append(f"- {TITLES.get(b, b)} unavailable: {why}")
    if unavailable:
        lines.append("")
    if synthetic or not tcp_lines:
        lines += ["### Targets", ""] + targets(records, sizes) + [""]
        lines += sweeps(records)
        lines += noisy_neighbour_table(records)
    if tcp_lines:
        tcp = meta.get("tcp") or {}
        lines += ["### Real-guest TCP", "",
                  f"iperf3 TCP {tcp.get('seconds')} s, one stream, TCG guests (1 vCPU, {tcp.get('qemu')}); "
                  "paths interleaved per repetition; cells: median (min–max); ratios: median of "
                  "per-repetition ratios against the tap path. Backend CPU: xdpvhostd / testpmd "
                  "processes; for tap QEMU's non-vCPU threads (see bench/README.md).", ""] + tcp_lines + [""]
    md = "\n".join(lines) + "\n"
    with open(os.path.join(out_dir, "summary.md"), "w") as f:
        f.write(md)
    return md
