#!/usr/bin/python3
"""xdpvhost benchmark: xdpvhostd side by side with DPDK
(net_af_xdp + net_vhost) and the bare AF_XDP loop, on a veth pair in
namespaces, one DPDK virtio_user guest.

    sudo bench/run.py [--smoke] [--out DIR] [--xdpvhostd PATH]

See bench/README.md for what each number means."""

import argparse
import datetime
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "pylib"))

from xvbench import backends, harness, profile  # noqa: E402


def first_existing(*paths):
    for p in paths:
        if p and os.path.exists(p):
            return p
    return None


def default_tools():
    for d in (os.path.join(ROOT, "build-bench", "bench"), os.path.join(ROOT, "build", "bench")):
        if os.path.exists(os.path.join(d, "xvb-xdpcount")):
            return d
    return os.path.join(ROOT, "build", "bench")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true",
                    help="a few seconds per scenario, every code path, no thresholds (CI)")
    ap.add_argument("--out", help="output directory (default bench/results/<profile>-<UTC time>)")
    ap.add_argument("--xdpvhostd", help="the daemon binary (default $XDPVHOSTD, then build*/daemon/xdpvhostd)")
    ap.add_argument("--tools-dir", help="where xvb-xdpcount, xvb-paced-send, xvb-icmp-rr and "
                    "xdp_count.bpf.o are (default build-bench/bench, then build/bench)")
    ap.add_argument("--backends", default=",".join(backends.ALL),
                    help=f"comma-separated subset of {','.join(backends.ALL)}")
    ap.add_argument("--reps", type=int, help="repetitions of the A B C D order (default: profile's)")
    ap.add_argument("--backend-cpu", type=int, default=0, help="core of the backend and of the source/client")
    ap.add_argument("--guest-cpu", type=int, default=1, help="core of the guest")
    ap.add_argument("--nice", type=int, default=0,
                    help="nice level of backend and guest, e.g. -10 on a machine other jobs share "
                    "(the source and the ICMP client always run at -20)")
    ap.add_argument("--client-sched", choices=("fifo", "nice"), default="fifo",
                    help="ICMP client scheduling: SCHED_FIFO 10 (default) or nice -20 only")
    ap.add_argument("--lock-wait", type=float, default=300, help="seconds to wait for another run to finish")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--perf", metavar="DIR",
                    help="record each scenario with perf (software clock) over the backend's "
                    "processes; data and flat reports go to DIR")
    ap.add_argument("--scenarios", help="comma-separated subset of scenario names to run "
                    "(e.g. guest_to_outside,request_response); default all")
    ap.add_argument("--tcp-backends", help="real-guest TCP paths, comma-separated subset of "
                    "tap,xdpvhostd,dpdk,tap-seg (default: all; smoke: tap,xdpvhostd)")
    ap.add_argument("--tcp-secs", type=int, help="iperf3 seconds per real-guest TCP run (default 10; smoke 3)")
    ap.add_argument("--tcp-reps", type=int, help="repetitions of the real-guest TCP order (default: --reps)")
    ap.add_argument("--guest-image", help="the test guest image (tests/guest/build_image.sh; default "
                    "$XDPVHOST_GUEST_IMAGE_DIR, then build*/guest-image)")
    ap.add_argument("--xdpvhostd-tunables", metavar="K=V,...",
                    help="xdpvhostd's start-up tunables instead of the defaults "
                    "(busy_poll_us=50,signal_batch=32,napi_busy_poll=false)")
    ap.add_argument("--minutes", type=float, default=60,
                    help="with --scenarios soak: how long the soak runs (default 60)")
    ap.add_argument("--seed", type=int, help="with --scenarios soak: replay the soak of this seed")
    ap.add_argument("--kill-every", type=int,
                    help="with --scenarios soak: a SIGKILL and restart every Nth epoch (0: one daemon "
                         "lifetime for the whole run; default: the soak's)")
    ap.add_argument("--warmup", type=int,
                    help="with --scenarios soak: checkpoints left out of the slopes (default: the soak's)")
    ap.add_argument("--cycles", type=int, default=200,
                    help="with --scenarios node_scale: port.add calls timed at each port count")
    ap.add_argument("--summary-only", metavar="JSONL",
                    help="only rebuild summary.md and the plots from an existing results.jsonl")
    args = ap.parse_args()

    if args.scenarios == "soak":
        return soak(args)
    if args.scenarios == "node_scale":
        from xvbench import node_scale
        args.xdpvhostd = args.xdpvhostd or os.environ.get("XDPVHOSTD") or first_existing(
            os.path.join(ROOT, "build", "daemon", "xdpvhostd"))
        return node_scale.run(args)
    prof = profile.SMOKE if args.smoke else profile.FULL
    if args.reps:
        prof.reps = args.reps
    if args.tcp_secs:
        prof.tcp_secs = args.tcp_secs
    if args.tcp_reps:
        prof.tcp_reps = args.tcp_reps
    for kv in (args.xdpvhostd_tunables or "").split(","):
        if kv.strip():
            k, _, v = kv.partition("=")
            prof.xdpvhostd_tunables[k.strip()] = (v.strip().lower() == "true") if v.strip().lower() in (
                "true", "false") else int(v)
    if args.summary_only:
        return rebuild(args)
    args.tcp_backends = ([b.strip() for b in args.tcp_backends.split(",") if b.strip()]
                         if args.tcp_backends else list(prof.tcp_backends))
    bad = [b for b in args.tcp_backends if b not in ("tap", "xdpvhostd", "dpdk", "tap-seg")]
    if bad:
        ap.error(f"unknown real-guest TCP paths {bad}")
    args.guest_image = args.guest_image or os.environ.get("XDPVHOST_GUEST_IMAGE_DIR") or first_existing(
        *(os.path.join(ROOT, d, "guest-image", "initrd.img") for d in ("build", "build-bench", "build-dev")))
    if args.guest_image and args.guest_image.endswith("initrd.img"):
        args.guest_image = os.path.dirname(args.guest_image)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    bad = [b for b in args.backends if b not in backends.ALL]
    if bad:
        ap.error(f"unknown backends {bad}")
    if not args.out:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        args.out = os.path.join(HERE, "results", f"{prof.name}-{stamp}")
    args.out = os.path.abspath(args.out)
    args.tools_dir = os.path.abspath(args.tools_dir or os.environ.get("XVB_TOOLS_DIR") or default_tools())
    args.xdpvhostd = args.xdpvhostd or os.environ.get("XDPVHOSTD") or first_existing(
        os.path.join(ROOT, "build", "daemon", "xdpvhostd"),
        os.path.join(ROOT, "build-bench", "daemon", "xdpvhostd"))
    if args.xdpvhostd:
        args.xdpvhostd = os.path.abspath(args.xdpvhostd)
    return harness.run(args, prof)


def soak(args):
    """The soak (tests/soak/README.md): not a side-by-side measurement but
    days of a node's life in --minutes; its report goes to --out."""
    import subprocess
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    out = os.path.abspath(args.out or os.path.join(HERE, "results", f"soak-{stamp}"))
    cmd = [sys.executable, os.path.join(ROOT, "tests", "soak", "run_soak.py"),
           "--minutes", str(args.minutes), "--workdir", out]
    daemon = args.xdpvhostd or os.environ.get("XDPVHOSTD") or first_existing(
        os.path.join(ROOT, "build", "daemon", "xdpvhostd"))
    image = args.guest_image or os.environ.get("XDPVHOST_GUEST_IMAGE_DIR") or first_existing(
        os.path.join(ROOT, "build", "guest-image"))
    cmd += ["--xdpvhostd", daemon] if daemon else []
    cmd += ["--guest-image", image] if image else []
    cmd += ["--seed", str(args.seed)] if args.seed is not None else []
    cmd += ["--kill-every", str(args.kill_every)] if args.kill_every is not None else []
    cmd += ["--warmup", str(args.warmup)] if args.warmup is not None else []
    return subprocess.call(cmd)


def rebuild(args):
    import json
    from xvbench import summary, plots
    out = os.path.dirname(os.path.abspath(args.summary_only))
    with open(args.summary_only) as f:
        recs = [json.loads(line) for line in f if line.strip()]
    run_ids = [r["run_id"] for r in recs if r.get("scenario") == "run"]
    if run_ids:
        recs = [r for r in recs if r["run_id"] == run_ids[-1]]
    print(summary.write(out, recs))
    if not args.no_plots:
        print(plots.draw(out, recs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
