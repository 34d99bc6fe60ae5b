"""PNG plots (matplotlib, Agg): rate vs frame size, latency vs
busy_poll_us, backend CPU vs load. Medians with min–max bars."""

import os
import statistics

from .summary import BACKENDS, TITLES, by_rep, dig

COLORS = {"afxdp": "tab:gray", "dpdk": "tab:blue", "dpdk-bp": "tab:cyan", "xdpvhostd": "tab:red"}


def _stats(vals):
    v = list(vals.values())
    return (statistics.median(v), min(v), max(v)) if v else (None, None, None)


def rate_vs_size(plt, records, sizes, path):
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, scen, title in ((axes[0], "guest_to_outside", "guest → outside (max rate)"),
                            (axes[1], "outside_to_guest", "outside → guest (≤0.5% loss)")):
        width = 0.8 / len(BACKENDS)
        for i, b in enumerate(BACKENDS):
            xs, ys, lo, hi = [], [], [], []
            for j, s in enumerate(sizes):
                m, mn, mx = _stats(by_rep(records, b, scen, {"size": s}, lambda r: r.get("pps"))[0])
                if m is None:
                    continue
                xs.append(j + (i - (len(BACKENDS) - 1) / 2) * width)
                ys.append(m / 1e3)
                lo.append((m - mn) / 1e3)
                hi.append((mx - m) / 1e3)
            if xs:
                ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=TITLES[b], color=COLORS[b])
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([f"{s} B" for s in sizes])
        ax.set_ylabel("kpps")
        ax.set_title(title)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def latency_vs_busy_poll(plt, records, path):
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    values = sorted({r["params"]["busy_poll_us"] for r in records
                     if r.get("scenario") == "sweep_busy_poll" and r.get("status") == "ok"})
    have = False
    loads = (("request_response", "-", "request/response"), ("light_load", "--", "1 req/ms"))
    for load, style, title in loads:
        for pct, marker in (("p50", "o"), ("p99", "^")):
            pts = [(v, _stats(by_rep(records, "xdpvhostd", "sweep_busy_poll", {"busy_poll_us": v, "load": load},
                                     lambda r, p=pct: dig(r, "rtt_us", p))[0])[0]) for v in values]
            pts = [(x, y) for x, y in pts if y is not None]
            if pts:
                have = True
                ax.plot(*zip(*pts), style, marker=marker, color=COLORS["xdpvhostd"] if pct == "p50" else "tab:orange",
                        label=f"xdpvhostd {title} {pct}")
        cpu = [(v, _stats(by_rep(records, "xdpvhostd", "sweep_busy_poll", {"busy_poll_us": v, "load": load},
                                 lambda r: dig(r, "cpu", "backend", "core_fraction"))[0])[0]) for v in values]
        cpu = [(x, y * 100) for x, y in cpu if y is not None]
        if cpu:
            ax2.plot(*zip(*cpu), style, marker="s", color=COLORS["xdpvhostd"], label=f"xdpvhostd {title}")
    for b in ("dpdk", "afxdp"):
        for scen, style, title in loads:
            m = _stats(by_rep(records, b, scen, {}, lambda r: dig(r, "rtt_us", "p50"))[0])[0]
            if m is not None:
                ax.axhline(m, linestyle=style, color=COLORS[b], alpha=0.7, label=f"{TITLES[b]} {title} p50")
            c = _stats(by_rep(records, b, scen, {}, lambda r: dig(r, "cpu", "backend", "core_fraction"))[0])[0]
            if c is not None:
                ax2.axhline(c * 100, linestyle=style, color=COLORS[b], alpha=0.7, label=f"{TITLES[b]} {title}")
    if not have:
        ax.text(0.5, 0.5, "xdpvhostd sweep unavailable in this run", transform=ax.transAxes, ha="center",
                color="tab:red")
    ax.set_yscale("log")
    ax.set_xlabel("busy_poll_us")
    ax.set_ylabel("RTT (µs, log)")
    ax.set_title("RTT vs busy_poll_us")
    ax2.set_xlabel("busy_poll_us")
    ax2.set_ylabel("backend CPU (% of a core)")
    ax2.set_title("backend CPU vs busy_poll_us")
    for a in (ax, ax2):
        a.grid(alpha=0.3)
        a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def cpu_vs_load(plt, records, sizes, path):
    fig, ax = plt.subplots(figsize=(8, 4.5))
    s = sizes[0]
    for b in BACKENDS:
        pts = []
        for scen, params, load_fn in (
                ("idle", {}, lambda r: 0.0),
                ("light_load", {}, lambda r: 2 * r.get("transactions_per_s", 0)),
                ("request_response", {"interval_us": 0}, lambda r: 2 * r.get("transactions_per_s", 0)),
                ("outside_to_guest", {"size": s}, lambda r: r.get("pps")),
                ("guest_to_outside", {"size": s}, lambda r: r.get("pps"))):
            loads = by_rep(records, b, scen, params, load_fn)[0]
            cpu = by_rep(records, b, scen, params, lambda r: dig(r, "cpu", "backend", "core_fraction"))[0]
            if loads and cpu:
                pts.append((statistics.median(loads.values()) / 1e3, statistics.median(cpu.values()) * 100, scen))
        if pts:
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", color=COLORS[b], label=TITLES[b])
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel(f"packets/s through the backend (k, {s} B; idle, 1 req/ms, RR, receive, transmit)")
    ax.set_ylabel("backend CPU (% of a core)")
    ax.set_title("backend CPU vs load")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw(out_dir, records):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        return f"plots skipped: matplotlib not importable ({e}); run with Debian's /usr/bin/python3"
    meta = next((r["result"] for r in records if r.get("scenario") == "run"), {})
    sizes = tuple(dig(meta, "profile", "sizes") or (64, 1500))
    made = []
    for name, fn in (("rate_vs_size.png", lambda p: rate_vs_size(plt, records, sizes, p)),
                     ("latency_vs_busy_poll.png", lambda p: latency_vs_busy_poll(plt, records, p)),
                     ("cpu_vs_load.png", lambda p: cpu_vs_load(plt, records, sizes, p))):
        path = os.path.join(out_dir, name)
        fn(path)
        made.append(path)
    return "plots: " + ", ".join(made)
