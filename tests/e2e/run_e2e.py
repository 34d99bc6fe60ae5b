#!/usr/bin/env python3
"""xdpvhost end-to-end suite: unmodified Linux guests in QEMU against xdpvhostd
(the end-to-end suite). Every scenario prints its figures and checks as it goes, then
PASS / FAIL / PENDING; the suite ends with a summary table and
"N passed, N failed" and exits non-zero if any scenario failed.

    run_e2e.py --image BUILD/guest-image --daemon BUILD/daemon/xdpvhostd
    run_e2e.py --build-dir BUILD --scenario pair --echo    # one scenario, consoles live
    run_e2e.py --list

Needs root for the uplink scenario (network namespaces). Everything it starts
(QEMU, xdpvhostd, iperf3, tcpdump) dies with it; its namespaces (xve2e-*) are
deleted on exit and, if a previous run was killed, at start. Logs and guest
consoles stay in /tmp/xdpvhost-e2e/SCENARIO/, results in
/tmp/xdpvhost-e2e/results.json. Standard library only.
"""

from __future__ import annotations

import argparse
import atexit
import fcntl
import json
import os
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)

from e2e_context import WORKROOT, Context, stale_netns  # noqa: E402
from xvtest import guest as qemu_guest, netns  # noqa: E402  (tests/pylib, on the path through e2e_context)
import scenario_devices  # noqa: E402
import scenario_lifecycle  # noqa: E402
import scenario_mac_learning  # noqa: E402
import scenario_multiqueue  # noqa: E402
import scenario_pair  # noqa: E402
import scenario_queue_move  # noqa: E402
import scenario_uplink  # noqa: E402
from scenario_result import Pending, ScenarioResult, print_summary  # noqa: E402

# name, what it shows, function. Run in this order. Typical durations under
# TCG on 2 cores (5 s / 3 s iperf3 tests, 5 restart cycles) are in
# tests/e2e/README.md.
SCENARIOS = [
    ("pair", "two guests, QEMU client (reconnect=1) / daemon server: ping, TCP both ways, UDP, "
             "HTTP sha256, CSUM and TSO guest to guest", scenario_pair.run_pair),
    ("tso-off", "vm2 without TSO: vm1's TSO frames segmented in software for it; HTTP sha256",
     scenario_pair.run_tso_off),
    ("qemu-server", "QEMU vhost-user server, daemon ports in client mode (KubeVirt)",
     scenario_pair.run_qemu_server),
    ("mrg-rxbuf-off", "guest with mrg_rxbuf=off", scenario_devices.run_mrg_rxbuf_off),
    ("event-idx-off", "guest with event_idx=off", scenario_devices.run_event_idx_off),
    ("indirect-desc-off", "guest with indirect_desc=off", scenario_devices.run_indirect_desc_off),
    ("mq", "2 queue pairs (mq=on, -smp 2, port queues 2)", scenario_devices.run_mq),
    ("reboot", "virtio reset: QMP system_reset and in-guest reboot -f; traffic resumes",
     scenario_lifecycle.run_reboot),
    ("qemu-restart", "QEMU SIGKILLed and restarted on the same socket; no fd/memory leak",
     scenario_lifecycle.run_qemu_restart),
    ("qemu-restart-server", "QEMU server SIGKILLed and restarted, daemon client reconnects; no "
                            "fd/memory leak", scenario_lifecycle.run_qemu_restart_server),
    ("daemon-restart-client", "xdpvhostd SIGKILLed and restarted, QEMU server / daemon client",
     scenario_lifecycle.run_daemon_restart_client),
    ("daemon-restart-server", "xdpvhostd SIGKILLed and restarted, QEMU client reconnect=1 / "
                              "daemon server", scenario_lifecycle.run_daemon_restart_server),
    ("uplink", "guest <-> peer namespace through the AF_XDP veth uplink, checksums verified",
     scenario_uplink.run_uplink),
    ("jumbo", "MTU 9000 through the uplink: 8972-byte pings, TCP and HTTP sha256 both ways",
     scenario_uplink.run_jumbo),
    ("mac-learn", "ports without a MAC learn their guests' MACs; pings guest <-> guest <-> peer; "
                  "a forged source MAC is dropped as spoofed_source", scenario_mac_learning.run_mac_learn),
    ("mq-uplink", "4 vCPUs, 4 queue pairs on 2 service threads: flows from the uplink spread "
                  "over the pairs; ethtool -L combined 1 under traffic",
     scenario_multiqueue.run_mq_uplink),
    ("mq-limit", "QEMU asks for more queue pairs than the port's maximum: QEMU reports it",
     scenario_multiqueue.run_mq_limit),
    ("queue-move", "HTTP both ways (sha256) while the port's queue groups and the uplink's "
                   "queue move between the 2 service threads (queue.move)",
     scenario_queue_move.run_queue_move),
]
# Run only when named (ctest runs them as e2e.multiqueue of their own).
NAMED_ONLY = {"mq-uplink", "mq-limit", "queue-move"}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", help="build tree: defaults --image to BUILD/guest-image and "
                                       "--daemon to BUILD/daemon/xdpvhostd")
    p.add_argument("--image", help="guest image directory (tests/guest/build_image.sh)")
    p.add_argument("--daemon", help="the xdpvhostd binary")
    p.add_argument("--scenario", action="append", default=[],
                   help="run only these (repeatable, or comma-separated)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--iperf-secs", type=int, default=5, help="iperf3 test length in pair/uplink")
    p.add_argument("--short-iperf-secs", type=int, default=3,
                   help="iperf3 test length in the other scenarios")
    p.add_argument("--cycles", type=int, default=5,
                   help="QEMU kill/restart cycles after the warm-up one (leak check)")
    p.add_argument("--echo", action="store_true", help="copy every guest console to stdout")
    p.add_argument("--log-level", help="xdpvhostd --log-level (e.g. debug)")
    p.add_argument("--workroot", default=WORKROOT)
    return p.parse_args(argv)


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.list:
        for name, title, _ in SCENARIOS:
            print(f"{name:24} {title}")
        return 0
    image = a.image or (a.build_dir and os.path.join(a.build_dir, "guest-image"))
    daemon = a.daemon or (a.build_dir and os.path.join(a.build_dir, "daemon", "xdpvhostd"))
    if not image or not os.path.exists(os.path.join(image, "initrd.img")):
        print(f"run_e2e: no guest image at {image!r}: run tests/guest/build_image.sh DIR "
              "(or ctest's guest.image fixture)", file=sys.stderr)
        return 2
    if not daemon or not os.access(daemon, os.X_OK):
        print(f"run_e2e: no xdpvhostd at {daemon!r}: build it (ninja xdpvhostd)", file=sys.stderr)
        return 2
    wanted = [s for arg in a.scenario for s in arg.split(",") if s]
    known = {n for n, _, _ in SCENARIOS}
    for s in wanted:
        if s not in known:
            print(f"run_e2e: unknown scenario {s!r}; --list shows them", file=sys.stderr)
            return 2
    selected = [x for x in SCENARIOS
                if x[0] in wanted or (not wanted and x[0] not in NAMED_ONLY)]

    os.makedirs(a.workroot, exist_ok=True)
    lock = open(os.path.join(a.workroot, ".lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"run_e2e: another run holds {a.workroot}/.lock; waiting", flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
    for ns in stale_netns():
        print(f"run_e2e: deleting namespace {ns} left by an earlier run", flush=True)
        netns.delete(ns)

    ctx = Context(image, daemon, workroot=a.workroot, iperf_secs=a.iperf_secs,
                  short_iperf_secs=a.short_iperf_secs, cycles=a.cycles, echo=a.echo,
                  log_level=a.log_level)
    atexit.register(ctx.cleanup)

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    accel, reason = qemu_guest.choose_accel(image)
    print(f"xdpvhost e2e: daemon {daemon}\n  image {image}\n  {qemu_guest.qemu_version()}, "
          f"guests under {accel} ({reason})\n  work dir {a.workroot}; "
          f"{len(selected)} scenario(s)", flush=True)
    results: list[ScenarioResult] = []
    t0 = time.monotonic()
    try:
        for name, title, fn in selected:
            print(f"\n== {name}: {title}", flush=True)
            r = ScenarioResult(name, title)
            results.append(r)
            error = None
            try:
                fn(ctx, r)
            except SystemExit:
                r.finish(RuntimeError("interrupted"))
                raise
            except Exception as e:  # noqa: BLE001 - a scenario's failure, reported
                error = e
                if not isinstance(e, Pending):
                    r.say(traceback.format_exc().rstrip().splitlines()[-1])
            finally:
                ctx.cleanup()
            r.finish(error)
    finally:
        ctx.cleanup()
        total = time.monotonic() - t0
        with open(os.path.join(a.workroot, "results.json"), "w") as f:
            json.dump({"accel": accel, "daemon": daemon, "seconds": round(total, 1),
                       "scenarios": [r.as_dict() for r in results]}, f, indent=2)
        print(f"\nsuite took {total:.0f} s; logs and consoles in {a.workroot}/SCENARIO/")
        print_summary(results)
    return 1 if any(r.status != "PASS" and r.status != "PENDING" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
