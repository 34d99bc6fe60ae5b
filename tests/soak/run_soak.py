#!/usr/bin/env python3
"""The soak: days of a node's life compressed into minutes, driven by one
seed (printed first, so that a failing run is replayed with --seed).

  1. idle     the daemon with its uplink and three idle ports for --idle-s
              seconds: its fd count, sampled every 5 s, never changes;
  2. epochs   until --minutes are up, each --churn-s seconds of every actor
              at once (actors.py: testpmd and QEMU guest lifetimes, up to 64
              ports added and removed, a second uplink added and removed
              with its ports, uplink faults, control clients with
              malformed requests, a scrape a second, SIGHUP reloads, a
              SIGKILL and restart from the state file every --kill-every
              epochs, paced traffic from the peer), sampled every 10 s; then
              every actor settles back to the baseline and a checkpoint is
              taken: the daemon's ledger (status), the node's census
              (node_census.py) and the frame accounting of the daemon's
              lifetime so far (soak_accounting.py).

Pass: no actor found anything wrong; no service thread missed its heartbeat
(awake 1 s without a poll round); the accounting closes at every
checkpoint; after the --warmup checkpoints every count (fds by kind,
mappings, threads, BPF programs and maps system-wide, XDP attachments,
socket files, namespaces, interfaces) stays what it was, i.e. grows 0 per
hour; within a daemon lifetime, after its first checkpoint, the daemon's
resident memory ends no more than --rss-slack-kib above its lowest, and its
heap in use (allocated, not freed) no more than --heap-slack-kib; no
warning or error line in the log but those the faults
explain (EXPECTED_PROBLEMS); the daemon stops cleanly at the end.

Needs root (namespaces, XDP), dpdk-testpmd, and for the QEMU guests the
image of tests/guest (--guest-image; without it those lifetimes are left
out and the report says so). The report (JSON) goes to WORKDIR/report.json.
"""

import argparse
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
from xvtest import control, paths  # noqa: E402

import actors  # noqa: E402
import node_census  # noqa: E402
import soak_accounting  # noqa: E402
import soak_lab  # noqa: E402

# Warning and error lines that a fault the soak makes explains (patterns,
# with the fault); any other line at warning level or worse fails the run.
EXPECTED_PROBLEMS = (
    r"uplink up0: xvsoak-n0 is down$",                                # link down, veth deleted
    r"uplink up0: interface xvsoak-n0 is gone; waiting for it",       # veth deleted
    # A restart while the veth was deleted, or had one channel (queue 1 gone).
    r"uplink up0: interface xvsoak-n0 does not exist \(yet\); waiting for it",
    r"queue 1: xsk: xvsoak-n0 queue 1: copy-mode bind refused: Invalid argument",
    r"uplink up0: its XDP program is no longer on xvsoak-n0 \(removed by someone else\)",
    # The veth deleted while the program removed by someone else is being
    # attached again (two faults at once): the attach finds no device, and
    # the uplink waits for the interface.
    r"uplink up0: (still not set up: )?xdp: interface xvsoak-n0: No such device",
    # A queue bound again right after its program was removed, or the second
    # uplink added right after it was removed (the kernel has not let go of
    # the old socket yet): tried again shortly.
    r"queue \d: xsk: xvsoak-n[01] queue \d: copy-mode bind refused: Device or resource busy",
    # The uplink's MTU lowered below the ports' (1280): said while it lasts.
    r"uplink up0: port \w+: mtu \d+ needs frames of \d+ bytes; uplink up0 carries at most",
    # A testpmd that listens (server=1) and is still running when the daemon
    # restarts reconnects with every split ring's base at 0 (DPDK 22.11
    # virtio_user), far behind its avail index: those rings are refused.
    r"port g1: vring \d broken \(avail_index_jump\)",
    # The veth deleted while the uplink counts its RX queues.
    r"uplink up0: its RX queues cannot be counted: ETHTOOL_GCHANNELS on xvsoak-n0: No such device",
)


class Soak:
    def __init__(self, args):
        self.seed = args.seed
        self.workdir = args.workdir
        self.churn_s = args.churn_s
        self.kill_every = args.kill_every
        self.guest_image = args.guest_image
        self.lab = soak_lab.Lab(self.workdir, args.xdpvhostd, bpffs=args.bpffs)
        self.generation = 0
        self.epoch = 0
        self.restarting = threading.Event()
        self.failures, self.events = [], []
        self.heartbeat_misses_reported = set()  # (daemon lifetime, thread)
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        # The daemon dies with the thread that started it (PR_SET_PDEATHSIG is
        # the parent thread's), so every start runs on this one, which lives
        # as long as the run.
        self.launcher = concurrent.futures.ThreadPoolExecutor(max_workers=1)

    def start_daemon(self):
        """(Re)starts the daemon on the launcher thread; returns once it answers."""
        return self.launcher.submit(self.lab.start_daemon).result()

    @property
    def daemon(self):
        return self.lab.daemon

    def now(self):
        return round(time.monotonic() - self.t0, 1)

    def event(self, actor, text):
        with self.lock:
            self.events.append((self.now(), actor, text))
        print(f"[{self.now():7.1f}] {actor}: {text}", flush=True)

    def fail(self, text):
        with self.lock:
            self.failures.append((self.now(), text))
        print(f"[{self.now():7.1f}] FAIL: {text}", flush=True)

    def call(self, method, **params):
        """A control call; waits out a restart (the daemon down for a moment)."""
        deadline = time.monotonic() + 90
        while True:
            try:
                return control.call(self.daemon.control_path, method, params)
            except control.ControlUnavailable:
                if not self.restarting.is_set() and not self.daemon.alive():
                    raise RuntimeError(f"xdpvhostd is gone (exit {self.daemon.returncode}):\n"
                                       f"{self.daemon.tail(30)}") from None
                if time.monotonic() > deadline:
                    self.dump_stacks()
                    raise
                time.sleep(0.2)

    # A change the daemon made and saved just before a SIGKILL is made already
    # when the call is retried after the restart: its "name in use" or "no
    # such" error then says it was done.
    ALREADY_DONE = {"port.add": -32001, "uplink.add": -32001,
                    "port.remove": -32002, "uplink.remove": -32002}

    def change(self, method, **params):
        """A control call that adds or removes something, retried across a restart."""
        generation = self.generation
        try:
            return self.call(method, **params)
        except control.RpcError as e:
            if e.code != self.ALREADY_DONE.get(method) or (
                    generation == self.generation and not self.restarting.is_set()):
                raise
            self.event("soak", f"{method} {params.get('name')}: done before the restart "
                       f"({e.code})")
            return None

    def remove_ports(self, prefix):
        """Removes every port named prefix*: asked of the daemon, since after
        a restart the state file brought back what was there."""
        for p in self.call("port.list"):
            if p["name"].startswith(prefix):
                self.change("port.remove", name=p["name"])

    def dump_stacks(self):
        """Every thread's stack of a daemon that stopped answering, for the report."""
        path = os.path.join(self.workdir, f"stacks-{self.daemon.pid}.txt")
        with open(path, "w") as f:
            subprocess.run(["gdb", "-batch", "-p", str(self.daemon.pid), "-ex",
                            "thread apply all bt"], stdout=f, stderr=subprocess.STDOUT,
                           timeout=120, check=False)
        self.fail(f"xdpvhostd stopped answering; its threads' stacks: {path}")

    def taken_from(self, port):
        """Frames the daemon has taken from the port's guest (None while it restarts)."""
        try:
            return soak_accounting.taken_from(self.call("stats.get", port=port)["ports"][port])
        except (control.ControlUnavailable, control.RpcError):
            return None

    def wait(self, predicate, timeout=90, what="a condition"):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout} s")
            time.sleep(0.2)

    # ---- the baseline and what is sampled ---------------------------------------
    def at_baseline(self):
        """The uplink bound on every queue of the veth's baseline channels with
        its XDP program attached, the guest ports waiting for a frontend, the
        daemon healthy."""
        uplink = self.call("uplink.list")[0]
        if uplink.get("nic_rx_queues") != soak_lab.QUEUES or \
                [q["queue"] for q in uplink["queues"] if q.get("bind_mode") not in (None, "unbound")] != \
                list(range(soak_lab.QUEUES)):
            return False
        if not node_census.xdp_attachments(self.lab.node, soak_lab.NODE_IF):
            return False
        states = {p["name"]: p["state"] for p in self.call("port.list")}
        if any(states.get(name) != "waiting" for name in soak_lab.GUEST_PORTS):
            return False
        return self.call("health")["healthy"]

    def settled_stats(self):
        """stats.get once no frame counter has moved for a second."""
        last = None
        for _ in range(30):
            stats = self.call("stats.get")
            frames = soak_accounting.frame_accounting(stats)
            if frames == last:
                return stats
            last = frames
            time.sleep(1)
        raise TimeoutError(f"frame counters still moving 30 s into the checkpoint: {last}")

    def sample(self, kind):
        d = self.daemon
        status = self.call("status")
        ledger = dict(status["resources"])
        ledger["bpf_programs"] = len(ledger.get("bpf_programs", []))
        ledger["bpf_maps"] = len(ledger.get("bpf_maps", []))
        heartbeats = {t["index"]: t["heartbeat"] for t in status["threads"]}
        self.check_heartbeats(heartbeats)
        daemon_sockets = [f for f in node_census.socket_files(self.lab.sock_dir)
                          if not f.startswith("g1.")]  # g1's file is testpmd's (server=1)
        return {
            "t": self.now(), "kind": kind, "epoch": self.epoch, "generation": self.generation,
            "ledger": ledger,
            "heartbeats": heartbeats,
            "smaps": node_census.smaps_rollup(d.pid),
            "system": {
                "bpf_programs": len(node_census.bpf_program_ids()),
                "bpf_maps": len(node_census.bpf_map_ids()),
                "xdp_attached": len(node_census.xdp_attachments(self.lab.node, soak_lab.NODE_IF)),
                "xdp_attached_n1": len(node_census.xdp_attachments(self.lab.node,
                                                                   soak_lab.NODE_IF1)),
                "socket_files": len(daemon_sockets),
                "namespaces": len(node_census.namespaces(soak_lab.PREFIX)),
                "node_interfaces": len(node_census.interfaces(self.lab.node)),
            },
        }


    def check_heartbeats(self, heartbeats):
        """Every service thread ran its rounds: none went 1 s awake without
        one (the daemon counts it; reported once per thread and lifetime)."""
        for index, h in heartbeats.items():
            key = (self.generation, index)
            if h["misses"] and key not in self.heartbeat_misses_reported:
                self.heartbeat_misses_reported.add(key)
                self.fail(f"service thread {index} missed its heartbeat {h['misses']} times "
                          f"(longest silence {h['longest_silence_ms']} ms)")


# What must not grow: every count of the checkpoint samples (flattened names).
def is_count(name):
    return (name.startswith("system.") or name.startswith("ledger.fds") or
            name in ("ledger.threads", "ledger.bpf_programs", "ledger.bpf_maps") or
            (name.startswith("ledger.mapped") and name.endswith(".count")))


# Memory judged within each daemon lifetime, by the option that gives its
# slack (KiB): the resident figures, and the live heap (what a leak grows).
# The heap's free part is the allocator's: in the slopes, not judged.
JUDGED_MEMORY = {
    "ledger.rss_bytes": "rss_slack_kib", "smaps.Rss": "rss_slack_kib",
    "smaps.Anonymous": "rss_slack_kib", "smaps.Pss_Anon": "rss_slack_kib",
    "ledger.heap.in_use_bytes": "heap_slack_kib",
}


def is_memory(name):
    return name in JUDGED_MEMORY or name.startswith("ledger.heap.")


def idle_check(soak, seconds):
    """The daemon's fd count every 5 s over `seconds`, after 5 s to settle."""
    time.sleep(5)
    samples = []
    end = time.monotonic() + seconds
    while True:
        res = soak.daemon.resources()
        samples.append({"t": soak.now(), "fds": res["fds"], "fd_kinds": res["fd_kinds"]})
        if time.monotonic() >= end:
            break
        time.sleep(5)
    counts = {s["fds"] for s in samples}
    if len(counts) != 1:
        soak.fail(f"an idle daemon's fd count changed over {seconds} s: "
                  f"{[(s['t'], s['fds']) for s in samples]}")
    print(f"idle: {len(samples)} samples over {seconds} s, fds {sorted(counts)}", flush=True)
    return samples


def run_epoch(soak, cast, samples):
    stop = threading.Event()
    threads = []

    def guarded(actor):
        try:
            actor.run(stop)
        except Exception as e:  # an actor's failure is the run's, with where it happened
            soak.fail(f"{actor.name}: {e!r}\n{traceback.format_exc()[-1500:]}")
            stop.wait()

    def sampler():
        while not stop.wait(10):
            if soak.restarting.is_set():
                continue
            try:
                samples.append(soak.sample("churn"))
            except (control.ControlUnavailable, OSError):
                pass  # the daemon is being restarted this moment

    for actor in cast:
        threads.append(threading.Thread(target=guarded, args=(actor,), daemon=True))
    threads.append(threading.Thread(target=sampler, daemon=True))
    for t in threads:
        t.start()
    time.sleep(soak.churn_s)
    stop.set()
    for t in threads:
        t.join(timeout=300)
        if t.is_alive():
            soak.fail("an actor did not end its step within 300 s of the epoch's end")
    for actor in cast:
        try:
            actor.settle()
        except Exception as e:
            soak.fail(f"{actor.name}: settling: {e!r}")


def checkpoint(soak):
    soak.wait(soak.at_baseline, timeout=120, what="the baseline (uplink bound, ports waiting)")
    stats = soak.settled_stats()
    time.sleep(1)
    sample = soak.sample("checkpoint")
    sample["accounting"] = soak_accounting.frame_accounting(stats)
    a = sample["accounting"]
    print(f"checkpoint {soak.epoch} (t={sample['t']} s, daemon lifetime {soak.generation}): "
          f"fds {sample['ledger']['fds']}, rss {sample['smaps'].get('Rss')} KiB, "
          f"heap {sample['ledger']['heap']['in_use_bytes'] >> 10} KiB in use "
          f"{sample['ledger']['heap']['free_bytes'] >> 10} KiB free, "
          f"rx {a['rx']} = tx {a['tx']} + drops {a['drops']} - refused where they came in "
          f"{a['ingress']} - uplink_refused {a['refused']} ({a['unaccounted']} unaccounted), "
          f"drops {a['drops_by_reason']}", flush=True)
    if a["floods"] or a["oversize"]:
        soak.fail(f"flooded ({a['floods']}) or oversize ({a['oversize']}) frames: the soak "
                  "sends neither, and the accounting cannot close with them")
    if a["unaccounted"] != 0:
        soak.fail(f"frames unaccounted: {a}")
    return sample


def verdict(soak, checkpoints, warmup, args):
    """Slopes of every count and memory figure over the checkpoints after the
    warm-up; a count that changed, or memory that grew within a lifetime by
    more than the slack, fails."""
    kept = checkpoints[warmup:]
    if not kept:
        soak.fail(f"no checkpoint after the {warmup} of the warm-up: a longer run is needed")
        return {}
    series = {}
    for s in kept:
        flat = soak_accounting.flatten({k: s[k] for k in ("ledger", "smaps", "system")})
        for name, value in flat.items():
            series.setdefault(name, []).append((s["t"], value, s["generation"]))
    slopes = {}
    for name, points in sorted(series.items()):
        if not (is_count(name) or is_memory(name)):
            continue
        slopes[name] = round(soak_accounting.slope_per_hour([(t, v) for t, v, _ in points]), 1)
        values = [v for _, v, _ in points]
        if is_count(name) and len(set(values)) > 1:
            soak.fail(f"{name} changed between checkpoints: {values}")
        if name in JUDGED_MEMORY:
            check_memory(soak, name, checkpoints, warmup, getattr(args, JUDGED_MEMORY[name]))
    return slopes


def check_memory(soak, name, checkpoints, warmup, slack_kib):
    """Within each daemon lifetime, after its warm-up (the run's first
    `warmup` checkpoints, and a restarted daemon's first), the last value is
    no more than the slack above the lowest before it."""
    by_life = {}
    for i, s in enumerate(checkpoints):
        value = soak_accounting.flatten({k: s[k] for k in ("ledger", "smaps")}).get(name)
        by_life.setdefault(s["generation"], []).append((i, value))
    scale = 1024 if name.startswith("ledger.") else 1  # bytes; smaps is in KiB
    for life, points in by_life.items():
        warm = [v for i, v in points[1:] if i >= warmup] if life else \
            [v for i, v in points if i >= warmup]
        if len(warm) >= 2 and (warm[-1] - min(warm[:-1])) / scale > slack_kib:
            soak.fail(f"{name} grew {warm[-1] - min(warm[:-1])} in daemon lifetime {life} after "
                      f"its warm-up: {[v for _, v in points]}")


def log_problems(soak):
    """The daemon's warning and error lines: those a fault explains counted by
    pattern, every other one a finding."""
    lines = soak.daemon.problems()
    counts, unexpected = {}, []
    for line in lines:
        pattern = next((p for p in EXPECTED_PROBLEMS if re.search(p, line)), None)
        if pattern is None:
            unexpected.append(line)
        else:
            counts[pattern] = counts.get(pattern, 0) + 1
    for line in unexpected[:20]:
        soak.fail(f"unexpected log line: {line}")
    return {"expected": counts, "unexpected": len(unexpected)}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, help="replay a run (default: a new seed)")
    ap.add_argument("--minutes", type=float, default=5, help="the whole run, idle phase included")
    ap.add_argument("--idle-s", type=int, default=60)
    ap.add_argument("--churn-s", type=float, default=40, help="seconds of churn per epoch")
    ap.add_argument("--kill-every", type=int, default=3,
                    help="a SIGKILL and restart in every Nth epoch (0: never)")
    ap.add_argument("--warmup", type=int, default=1, help="checkpoints left out of the slopes")
    ap.add_argument("--rss-slack-kib", type=int, default=4096)
    ap.add_argument("--heap-slack-kib", type=int, default=1024)
    ap.add_argument("--xdpvhostd", default=paths.xdpvhostd())
    ap.add_argument("--guest-image", default=os.environ.get("XDPVHOST_GUEST_IMAGE_DIR"))
    ap.add_argument("--workdir", default="/tmp/xdpvhost-soak")
    ap.add_argument("--bpffs", action="store_true",
                    help="the daemon sees bpffs, as in the DaemonSet: libxdp attaches its "
                    "program through a dispatcher")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1 << 32)
    print(f"soak seed: {args.seed} (replay: {sys.argv[0]} --seed {args.seed} "
          f"--minutes {args.minutes})", flush=True)
    if os.geteuid() != 0:
        print("the soak needs root (namespaces, XDP)")
        return 1
    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    if args.guest_image and not os.path.exists(os.path.join(args.guest_image, "vmlinuz")):
        args.guest_image = None
    soak = Soak(args)
    report = {"seed": args.seed, "minutes": args.minutes, "qemu_guests": bool(args.guest_image)}
    cast = [cls(soak, i) for i, cls in enumerate(actors.ALL)]
    samples, checkpoints = [], []
    clean_exit = None
    try:
        soak.lab.build()
        soak.start_daemon()
        soak.wait(soak.at_baseline, timeout=60, what="the uplink bound and the ports waiting")
        report["idle"] = idle_check(soak, args.idle_s)
        end = soak.t0 + args.minutes * 60
        while time.monotonic() + soak.churn_s + 20 < end or soak.epoch == 0:
            soak.event("soak", f"epoch {soak.epoch}")
            run_epoch(soak, cast, samples)
            checkpoints.append(checkpoint(soak))
            soak.epoch += 1
        report["slopes_per_hour"] = verdict(soak, checkpoints, args.warmup, args)
    except Exception as e:
        soak.fail(f"the run stopped: {e!r}\n{traceback.format_exc()[-2000:]}")
    finally:
        for actor in cast:
            try:
                actor.settle()
            except Exception:
                pass
        if soak.daemon:
            report["log_problems"] = log_problems(soak)
            try:
                clean_exit = soak.daemon.stop(timeout=20)
            except TimeoutError as e:
                soak.fail(str(e))
            if clean_exit not in (0, None):
                soak.fail(f"xdpvhostd exited with {clean_exit} at the end")
        soak.lab.teardown()
    report.update({
        "epochs": soak.epoch, "daemon_lifetimes": soak.generation + 1,
        "actors": {f"{a.name}#{i}": a.counts for i, a in enumerate(cast)},
        "testpmd_lifetimes_accounted": next((a.lifetimes for a in cast
                                             if isinstance(a, actors.TestpmdGuests)), []),
        "qemu_ping_replies": next((a.replies for a in cast if isinstance(a, actors.QemuGuests)), []),
        "checkpoints": checkpoints, "samples": samples, "events": soak.events,
        "failures": soak.failures,
    })
    with open(os.path.join(args.workdir, "report.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps({k: report[k] for k in ("seed", "epochs", "daemon_lifetimes", "actors",
                                              "qemu_ping_replies")}, indent=1))
    print("slopes per hour:", json.dumps(report.get("slopes_per_hour", {}), indent=1))
    silences = [h["longest_silence_ms"] for s in samples + checkpoints
                for h in s.get("heartbeats", {}).values()]
    print(f"service threads' longest silence awake: {max(silences, default=0)} ms "
          f"(a heartbeat is missed at 1000)")
    if soak.failures:
        print(f"soak FAILED ({len(soak.failures)} findings; seed {args.seed}):")
        for t, text in soak.failures[:30]:
            print(f"  [{t}] {text}")
        return 1
    print(f"soak passed: seed {args.seed}, {soak.epoch} epochs, {soak.generation + 1} daemon "
          f"lifetimes, report {args.workdir}/report.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
