#!/usr/bin/env python3
"""xdpvhost live-migration suite: real QEMU guests migrated
between vhost-user ports, QEMU to QEMU over loopback through QMP.

    run_migration.py --image BUILD/guest-image --daemon BUILD/daemon/xdpvhostd
    run_migration.py --build-dir BUILD --scenario two-node,two-node-dpdk

Scenarios: same-node (one daemon, two learn-move ports; a cancelled
migration first), same-node-fixed (the same with the guest's MAC fixed on
both ports, as KubeVirt's ports are), two-node (two namespaces, a daemon each, joined by a bridge), two-node-dpdk
(the same harness with DPDK testpmd as the backend on both nodes: the
reference; its figures are reported, its checks are not part of the
verdict unless --strict-dpdk). Needs root. Namespaces mig-*; logs and
consoles in /tmp/xdpvhost-mig/SCENARIO/, figures in
/tmp/xdpvhost-mig/results.json. Exit 1 if a scenario failed."""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

from mig_context import WORKROOT, MigContext  # noqa: E402
from network import Network  # noqa: E402
import scenario_same_node  # noqa: E402
import scenario_two_node  # noqa: E402
from scenario_result import Pending, ScenarioResult, print_summary  # noqa: E402

SCENARIOS = [
    ("same-node", "one daemon, two learn-move ports: a cancelled migration, then one that completes",
     scenario_same_node.run_same_node, True),
    ("same-node-fixed", "same-node with the guest's MAC fixed on both ports, as the DRA plugin adds "
                        "a KubeVirt VM's source and target",
     lambda ctx, r: scenario_same_node.run_same_node(ctx, r, "fixed"), True),
    ("two-node", "two nodes (namespaces, daemons, uplinks) on a bridge; ping 10 ms, TCP stream",
     lambda ctx, r: scenario_two_node.run_two_node(ctx, r, "xdpvhost"), True),
    ("two-node-rarp", "two-node with guest_announce=off: QEMU sends SEND_RARP, the destination "
                      "daemon announces the guest with a RARP",
     lambda ctx, r: scenario_two_node.run_two_node(ctx, r, "xdpvhost", guest_announce=False), True),
    ("two-node-dpdk", "the two-node harness with DPDK testpmd (net_vhost <-> net_af_packet) as "
                      "the backend: the reference figures",
     lambda ctx, r: scenario_two_node.run_two_node(ctx, r, "dpdk"), False),
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image")
    ap.add_argument("--daemon")
    ap.add_argument("--build-dir")
    ap.add_argument("--scenario", default="all")
    ap.add_argument("--strict-dpdk", action="store_true",
                    help="a failing DPDK reference scenario fails the suite")
    ap.add_argument("--echo", action="store_true")
    ap.add_argument("--log-level", help="xdpvhostd --log-level (e.g. debug)")
    ap.add_argument("--verify-memory", action="store_true",
                    help="same-node: the destination starts paused (-S) and its guest memory is "
                         "compared page by page with the source's before it runs")
    args = ap.parse_args()
    if args.build_dir:
        args.image = args.image or os.path.join(args.build_dir, "guest-image")
        args.daemon = args.daemon or os.path.join(args.build_dir, "daemon", "xdpvhostd")
    if not args.image or not args.daemon:
        ap.error("--image and --daemon (or --build-dir) are needed")
    if os.geteuid() != 0:
        print("run_migration: needs root (network namespaces)", file=sys.stderr)
        return 2
    wanted = [s for s in SCENARIOS if args.scenario == "all" or s[0] in args.scenario.split(",")]
    ctx = MigContext(args.image, args.daemon, verify_memory=args.verify_memory, echo=args.echo,
                     log_level=args.log_level)
    atexit.register(ctx.cleanup)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: sys.exit(1))
    Network(2).delete()  # left over by a run that was killed
    os.makedirs(WORKROOT, exist_ok=True)
    results = []
    failed = False
    for name, title, fn, counts in wanted:
        r = ScenarioResult(name, title)
        print(f"== {name}: {title}", flush=True)
        err = None
        try:
            fn(ctx, r)
        except Pending as e:
            err = e
        except Exception as e:  # noqa: BLE001 - reported, the suite goes on
            traceback.print_exc()
            err = e
        finally:
            ctx.cleanup()
        r.finish(err)
        results.append(r)
        if r.status != "PASS" and (counts or args.strict_dpdk):
            failed = True
    print_summary(results)
    with open(os.path.join(WORKROOT, "results.json"), "w") as f:
        json.dump([r.as_dict() for r in results], f, indent=2, default=str)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
