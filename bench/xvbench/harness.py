"""The run: topology up, every backend in turn (A B C D A B C D ...), every
scenario against each, sweeps on xdpvhostd, records, summary, plots, and
teardown whatever happens."""

import atexit
import datetime
import json
import fcntl
import os
import signal
import time

from xvtest.testpmd_console import ConsoleError  # tests/pylib, put on sys.path by run.py

from . import (backends, cpu_account, launch, noisy_neighbour, perf_profile, records, scenarios,
               summary, tcp_guests)
from .backends import Unavailable
from .load_tools import ToolError, XdpCounter
from .topology import Topology

WORKDIR = "/tmp/xdpvhost-bench"
LOCK = "/tmp/xdpvhost-bench.lock"


class Context:
    pass


STOP = []  # signals received


def check_stop():
    if STOP:
        raise KeyboardInterrupt(f"signal {STOP[0]}")


def log(msg):
    print(f"[{datetime.datetime.now().strftime('%H:%M:%S')}] {msg}", flush=True)


def main_scenarios(cfg):
    """(scenario, params, needs, tunables, fn(ctx, sut)) in the order they run."""
    out = []
    for size in cfg.sizes:
        out.append(("guest_to_outside", {"size": size}, ("g2o",), None,
                    lambda ctx, sut, size=size: scenarios.guest_to_outside(ctx, sut, size)))
    for size in cfg.sizes:
        out.append(("outside_to_guest", {"size": size}, ("o2g",), None,
                    lambda ctx, sut, size=size: scenarios.outside_to_guest(
                        ctx, sut, size, ctx.hints.get((sut.name, size)))))
    out.append(("request_response", {"interval_us": 0}, ("g2o", "o2g"), None,
                lambda ctx, sut: scenarios.request_response(ctx, sut, cfg.rr_s)))
    out.append(("light_load", {"interval_us": 1000}, ("g2o", "o2g"), None,
                lambda ctx, sut: scenarios.request_response(ctx, sut, cfg.light_s, interval_us=1000)))
    out.append(("idle", {}, ("g2o", "o2g"), None,
                lambda ctx, sut: scenarios.idle(ctx, sut, cfg.idle_s)))
    return out


BOTH = ("g2o", "o2g")


def sweep_rate(ctx):
    """Offered rate of the guest-RX sweeps: 90% of the highest lossless 64 B
    rate xdpvhostd reached at its default tunables (this repetition, or the
    last one that measured it), so every sweep value runs near capacity."""
    hint = ctx.hints.get(("xdpvhostd", 64))
    return round(0.9 * hint) if hint else ctx.cfg.sweep_o2g_pps


def sweep_list(cfg, rep):
    """xdpvhostd's tunable sweeps; value order alternates between repetitions."""
    def order(values):
        return tuple(values) if rep % 2 == 0 else tuple(reversed(values))
    out = []
    for v in order(cfg.busy_poll_values):
        out.append(("sweep_busy_poll", {"busy_poll_us": v, "load": "request_response"}, BOTH, {"busy_poll_us": v},
                    lambda ctx, sut: scenarios.request_response(ctx, sut, cfg.sweep_rr_s)))
        out.append(("sweep_busy_poll", {"busy_poll_us": v, "load": "light_load"}, BOTH, {"busy_poll_us": v},
                    lambda ctx, sut: scenarios.request_response(ctx, sut, cfg.sweep_light_s, interval_us=1000)))
    for v in order(cfg.signal_batch_values):
        out.append(("sweep_signal_batch", {"signal_batch": v, "load": "outside_to_guest", "size": 64},
                    BOTH, {"signal_batch": v},
                    lambda ctx, sut: with_port_counters(ctx, sut, lambda: scenarios.fixed_rate(
                        ctx, sut, sweep_rate(ctx), 64, cfg.sweep_trial_s))))
        out.append(("sweep_signal_batch", {"signal_batch": v, "load": "guest_to_outside", "size": 64},
                    BOTH, {"signal_batch": v},
                    lambda ctx, sut: with_port_counters(ctx, sut, lambda: scenarios.guest_to_outside(
                        ctx, sut, 64, cfg.sweep_trial_s))))
    for v in order(cfg.napi_values):
        out.append(("sweep_napi_busy_poll", {"napi_busy_poll": v, "load": "request_response"},
                    BOTH, {"napi_busy_poll": v},
                    lambda ctx, sut: with_napi_state(ctx, sut, lambda: scenarios.request_response(
                        ctx, sut, cfg.sweep_rr_s))))
        out.append(("sweep_napi_busy_poll", {"napi_busy_poll": v, "load": "outside_to_guest", "size": 64},
                    BOTH, {"napi_busy_poll": v},
                    lambda ctx, sut: with_napi_state(ctx, sut, lambda: scenarios.fixed_rate(
                        ctx, sut, sweep_rate(ctx), 64, cfg.sweep_trial_s))))
    return out


def isolation_list(cfg):
    """xdpvhostd only: the noisy-neighbour scenario, one record per
    attack, each with its own (without, with) window pairs."""
    return [("noisy_neighbour", {"attack": a, "size": 64}, ("g2o",), None,
             lambda ctx, sut, a=a: noisy_neighbour.noisy_neighbour(ctx, sut, a, 64, cfg.nn_pairs, cfg.nn_s,
                                                                   cfg.nn_period_us))
            for a in cfg.nn_attacks]


def with_port_counters(ctx, sut, fn):
    """fn's result plus the daemon's port and service-thread counter deltas
    (interrupts, kicks, sleeps, wakeups) over the run."""
    s0 = sut.stats()
    res = fn()
    s1 = sut.stats()
    d = scenarios.counter_delta(s0, s1) or {}
    threads = [scenarios.counter_delta({k: a.get(k) for k in THREAD_KEYS}, {k: b.get(k) for k in THREAD_KEYS})
               for a, b in zip(s0.get("threads") or [], s1.get("threads") or [])]
    res["daemon_counters"] = {"port": d.get("ports", {}).get("vm1"), "threads": threads}
    return res


THREAD_KEYS = ("sleeps", "wakeups", "busy_iterations", "empty_iterations")


def with_napi_state(ctx, sut, fn):
    res = fn()
    try:
        res["uplinks"] = sut.uplink_list()
    except Exception as e:  # noqa: BLE001
        res["uplinks"] = f"uplink.list failed: {e}"
    return res


def needs_met(needs, probe):
    missing = [n for n in needs if not probe.get(n)]
    if not missing:
        return None
    names = {"g2o": "guest->outside", "o2g": "outside->guest"}
    return "probe: no frames " + " and ".join(names[m] for m in missing)


def run_slot(ctx, name, rep):
    cfg, rec = ctx.cfg, ctx.recorder
    sut = backends.make(name, ctx)
    plan = main_scenarios(cfg)
    log(f"rep {rep}: {name} ({sut.description})")

    def all_unavailable(reason, items):
        for scen, params, *_ in items:
            rec.write(rep, name, scen, params, "unavailable", error=reason)

    lb = records.loadavg()
    try:
        try:
            sut.start()
        except Unavailable as e:
            log(f"  {name} unavailable: {str(e).splitlines()[0]}")
            rec.write(rep, name, "start", {}, "unavailable", error=str(e), load_before=lb)
            all_unavailable(str(e).splitlines()[0],
                            plan + (sweep_list(cfg, rep) + isolation_list(cfg) if sut.tunable else []))
            return
        pr = scenarios.probe(ctx, sut)
        pr["g2o"] = pr["g2o_frames"] > 0
        pr["o2g"] = pr["o2g_delivered"] > 0
        extra = {"backend_info": sut.info}
        if not (pr["g2o"] and pr["o2g"]):
            detail = {}
            try:
                detail["stats"] = sut.stats()
            except Exception as e:  # noqa: BLE001
                detail["stats"] = str(e)
            if hasattr(sut, "log_tail"):
                detail["log_tail"] = sut.log_tail()
            extra["probe_detail"] = detail
        err = None
        if not (pr["g2o"] and pr["o2g"]):
            err = (f"passes no traffic: {pr['g2o_frames']} frames guest->outside in {cfg.probe_s} s, "
                   f"{pr['o2g_delivered']}/{pr['o2g_sent']} outside->guest"
                   + (f"; uplink.list: {json.dumps(sut.info.get('uplinks'))}" if "uplinks" in sut.info else ""))
        rec.write(rep, name, "probe", {}, "ok" if err is None else "unavailable", result=pr, error=err,
                  load_before=lb, extra=extra)
        log(f"  probe: {pr['g2o_frames']} frames guest->outside, "
            f"{pr['o2g_delivered']}/{pr['o2g_sent']} outside->guest")
        items = plan + (sweep_list(cfg, rep) + isolation_list(cfg) if sut.tunable else [])
        if ctx.only:
            items = [it for it in items if it[0] in ctx.only]
        for i, item in enumerate(items):
            check_stop()
            scen, params, needs, tunables, fn = item
            if not sut.alive():
                all_unavailable(f"{name} died earlier in this slot", items[i:])
                rec.write(rep, name, "died", {}, "error", error=sut.death_note())
                log(f"  {name} died: {sut.death_note()}")
                break
            reason = needs_met(needs, pr)
            if reason and err:
                reason = f"{name} {err}"
            if reason:
                rec.write(rep, name, scen, params, "unavailable", error=reason)
                continue
            lb = records.loadavg()
            try:
                applied = None
                if tunables:
                    applied = sut.set_tunables(**tunables)["tunables"]
                if ctx.perf:
                    res = ctx.perf.around(ctx.groups["backend"].pids(),
                                          ctx.perf.file_stem(rep, name, scen, params),
                                          lambda: fn(ctx, sut))
                else:
                    res = fn(ctx, sut)
                if applied:
                    res["tunables"] = applied
                rec.write(rep, name, scen, params, "ok", result=res, load_before=lb)
                log(f"  {scen} {params}: {summary.one_line(scen, res)}")
                if scen == "outside_to_guest" and res.get("pps"):
                    ctx.hints[(name, params["size"])] = res["offered_pps"]
            except (Unavailable, ToolError) as e:
                rec.write(rep, name, scen, params, "unavailable" if isinstance(e, Unavailable) else "error",
                          error=str(e), load_before=lb)
                log(f"  {scen} {params}: {type(e).__name__}: {str(e).splitlines()[0]}")
            except (ConsoleError, OSError, RuntimeError, TimeoutError, KeyError, ValueError) as e:
                rec.write(rep, name, scen, params, "error", error=f"{type(e).__name__}: {e}", load_before=lb)
                log(f"  {scen} {params}: ERROR {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                if sut.endpoint is None or not sut.endpoint.alive():
                    all_unavailable("the endpoint testpmd died earlier in this slot", items[i + 1:])
                    break
            finally:
                if tunables:
                    try:
                        sut.set_tunables(**{k: cfg.xdpvhostd_tunables[k] for k in tunables})
                    except Exception:  # noqa: BLE001
                        pass
    finally:
        sut.stop()


def inherited_lock():
    """The lock file opened by a parent that holds it (`flock LOCK bench/run.py`):
    the same open file description, so flock() on it succeeds at once."""
    target = os.path.realpath(LOCK)
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.path.realpath(f"/proc/self/fd/{fd}") == target:
                fcntl.flock(int(fd), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return os.fdopen(int(fd), "a+")
        except (OSError, ValueError):
            continue
    return None


def lock_held_by_ancestor(f):
    """True if an ancestor of this process holds the flock on `f`'s file:
    the run was started as `flock /tmp/xdpvhost-bench.lock bench/run.py ...`
    (the machine's rule for every measurement), so it is ours already."""
    ino = os.fstat(f.fileno()).st_ino
    holders = set()
    try:
        with open("/proc/locks") as locks:
            for line in locks:
                parts = line.split()
                if "->" in parts:  # a waiter, not a holder
                    continue
                if len(parts) >= 6 and parts[1] == "FLOCK" and parts[5].split(":")[-1] == str(ino):
                    holders.add(int(parts[4]))
    except OSError:
        return False
    pid = os.getppid()
    while pid > 1:
        if pid in holders:
            return True
        try:
            with open(f"/proc/{pid}/stat") as st:
                pid = int(st.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def acquire_lock(wait_s):
    f = inherited_lock()
    if f is not None:
        log(f"holding {LOCK} through the descriptor the parent (flock) locked")
        return f
    f = open(LOCK, "a+")
    if lock_held_by_ancestor(f):
        return f
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            f.seek(0)
            f.truncate()
            f.write(str(os.getpid()))
            f.flush()
            return f
        except BlockingIOError:
            if time.monotonic() > deadline:
                f.seek(0)
                raise SystemExit(f"another benchmark run holds {LOCK} (pid {f.read().strip()}); "
                                 "never run two at once")
            time.sleep(1)


def clean_groups(groups):
    """Processes left in our cgroups by a killed earlier run (their testpmds
    would hold the file prefixes and the veth): end them by pid."""
    for g in groups.values():
        for pid in g.pids():
            log(f"ending leftover pid {pid} from an earlier run (cgroup {g.path})")
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def split_scenarios(only, profile):
    """(run the synthetic scenarios?, real-guest TCP scenarios to run)."""
    if only is None:
        return True, list(profile.tcp_scenarios)
    tcp = [s for s in tcp_guests.SCENARIOS if s in only]
    unknown = only - set(tcp_guests.SCENARIOS) - SYNTHETIC
    if unknown:
        raise SystemExit(f"unknown scenarios {sorted(unknown)}; synthetic: {sorted(SYNTHETIC)}, "
                         f"real-guest TCP: {list(tcp_guests.SCENARIOS)}")
    return bool(only & SYNTHETIC), tcp


SYNTHETIC = {"guest_to_outside", "outside_to_guest", "request_response", "light_load", "idle",
             "sweep_busy_poll", "sweep_signal_batch", "sweep_napi_busy_poll", "noisy_neighbour"}


def qemu_version():
    try:
        from xvtest.guest import qemu_version as qv
        return qv()
    except Exception:  # noqa: BLE001
        return None


def run_tcp(ctx, args, profile, scenarios_, order):
    """The real-guest TCP scenarios (tcp_guests): tap, xdpvhostd, dpdk interleaved."""
    image = args.guest_image
    ctx.check_stop = check_stop
    if not image or not os.path.exists(os.path.join(image, "initrd.img")):
        why = (f"no guest image at {image!r} (tests/guest/build_image.sh DIR, or ctest's guest.image "
               "fixture; --guest-image)")
        log(f"real-guest TCP: {why}")
        for name in order:
            for scen in scenarios_:
                ctx.recorder.write(None, name, scen, {}, "unavailable", error=why)
        return
    tcp_guests.setup(ctx, image)
    reps = profile.tcp_reps or profile.reps
    log(f"real-guest TCP: {scenarios_} x {order}, {reps} repetitions, {profile.tcp_secs} s each")
    tcp_guests.run(ctx, order, scenarios_, reps, profile.tcp_secs)


def raise_autogroup(nice):
    """With autogroup scheduling (Debian's default) a nice level counts only
    inside its own session: a compile in another session got as much CPU as
    a benchmark at nice -10. So the run's session (its autogroup) takes the
    level too, and gets its old one back at exit. Returns a note for the
    records, or None."""
    path = "/proc/self/autogroup"
    if not nice:
        return None
    try:
        with open(path) as f:
            old = int(f.read().split("nice")[1])
        with open(path, "w") as f:
            f.write(str(nice))
    except (OSError, ValueError, IndexError):
        return None

    def restore():
        try:
            with open(path, "w") as f:
                f.write(str(old))
        except OSError:
            pass
    atexit.register(restore)
    return f"session autogroup at nice {nice} during the run (was {old})"


def run(args, profile):
    if os.geteuid() != 0:
        raise SystemExit("the benchmark needs root (namespaces, XDP, cgroups)")
    lock = acquire_lock(args.lock_wait)
    os.makedirs(args.out, exist_ok=True)
    run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    ctx = Context()
    ctx.cfg = profile
    profile.backend_cpu = args.backend_cpu
    profile.guest_cpu = args.guest_cpu
    profile.nice = args.nice
    profile.client_sched = args.client_sched
    ctx_autogroup = raise_autogroup(args.nice)
    ctx.workdir = WORKDIR
    ctx.tools = args.tools_dir
    ctx.xdpvhostd = args.xdpvhostd
    ctx.hints = {}
    ctx.perf = perf_profile.PerfRecorder(os.path.abspath(args.perf)) if args.perf else None
    ctx.only = set(s.strip() for s in args.scenarios.split(",")) if args.scenarios else None
    os.makedirs(WORKDIR, exist_ok=True)
    kind, root = cpu_account.detect()
    pmu, pmu_reason = cpu_account.pmu_available()
    ctx.recorder = records.Recorder(os.path.join(args.out, "results.jsonl"), run_id, profile.name)
    ctx.groups = {n: cpu_account.CpuGroup(f"xvb-{n}") for n in ("backend", "guest", "load", "hostile")}
    clean_groups(ctx.groups)

    def on_signal(signum, frame):
        # A KeyboardInterrupt raised while a finalizer runs (Popen.__del__) is
        # swallowed by Python; the flag makes the run stop at the next check.
        STOP.append(signum)
        raise KeyboardInterrupt(f"signal {signum}")
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}

    order = [b for b in backends.ALL if b in args.backends]
    started = time.monotonic()
    interrupted = False
    synthetic, tcp = split_scenarios(ctx.only, profile)
    tcp_order = [b for b in tcp_guests.BACKENDS if b in args.tcp_backends] if tcp else []
    if not synthetic:
        order = []
    try:
        if order:
            ctx.topo = Topology().create()
            ctx.counter = XdpCounter(ctx.tools, os.path.join(WORKDIR, "xdpcount.log")).start()
        env = records.environment()
        meta = {"topology": ctx.topo.describe() if order else None, "environment": env,
                "cgroup": f"{kind} at {root}",
                "pmu": pmu, "pmu_note": pmu_reason, "backend_cpu": profile.backend_cpu,
                "guest_cpu": profile.guest_cpu, "nice": profile.nice, "autogroup": ctx_autogroup,
                "client_sched": profile.client_sched,
                "order": order, "reps": profile.reps,
                "xdp_counter_mode": ctx.counter.mode if order else None, "xdpvhostd": ctx.xdpvhostd,
                "tcp": {"scenarios": tcp, "backends": tcp_order, "seconds": profile.tcp_secs,
                        "reps": profile.tcp_reps or profile.reps, "guest_image": args.guest_image,
                        "qemu": qemu_version()} if tcp else None,
                "profile": {k: v for k, v in vars(profile).items()}}
        ctx.recorder.write(None, None, "run", {}, "ok", result=meta, load_before=records.loadavg())
        log(f"run {run_id} ({profile.name}): backends {order}, {profile.reps} repetitions; "
            f"backend cpu {profile.backend_cpu}, guest cpu {profile.guest_cpu}, nice {profile.nice}; "
            f"cgroup {kind}; {pmu_reason}")
        for rep in range(profile.reps if order else 0):
            for name in order:
                check_stop()
                run_slot(ctx, name, rep)
        if tcp and tcp_order:
            run_tcp(ctx, args, profile, tcp, tcp_order)
    except KeyboardInterrupt as e:
        interrupted = True
        log(f"interrupted ({e or 'Ctrl-C'}): tearing down")
    finally:
        launch.REGISTRY.kill_all()
        if getattr(ctx, "topo", None):
            ctx.topo.destroy()
        if tcp:
            tcp_guests.teardown(ctx)
        for g in ctx.groups.values():
            g.remove()
        for s, h in old.items():
            signal.signal(s, h)
        ctx.recorder.close()
    elapsed = time.monotonic() - started
    log(f"measurements took {elapsed:.0f} s")
    md = summary.write(args.out, [r for r in ctx.recorder.records], elapsed_s=elapsed, interrupted=interrupted)
    if not args.no_plots:
        from . import plots
        note = plots.draw(args.out, ctx.recorder.records)
        log(note)
    print(md)
    lock.close()
    errors = [r for r in ctx.recorder.records if r.get("status") == "error"]
    for r in errors:
        log(f"error: {r['backend']} {r['scenario']} {r['params']}: {r.get('error', '').splitlines()[0]}")
    if interrupted:
        return 130
    # "unavailable" (a backend that cannot run here, e.g. no uplink support)
    # is a result; "error" (a tool or console failure) fails the run.
    return 1 if errors else 0
