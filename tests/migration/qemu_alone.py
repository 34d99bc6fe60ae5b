#!/usr/bin/env python3
"""Does QEMU alone lose guest writes in a migration? The same-node
scenarios' migrations without any vhost-user backend: a TCG guest with no
NIC, kept busy in its kernel (a ping on loopback, a file written every
10 ms), migrated over loopback to a destination that waits paused (-S),
optionally after a migration cancelled half-way; then its memory is
compared page by page with the source's (memory_compare.py).

    qemu_alone.py --image BUILD/guest-image --runs 120 --cancel

Prints one line per run and, last, how many runs lost pages (exit 1 if
any). Needs QEMU and the guest image, no root. Work directories in
/tmp/xdpvhost-qemu-alone/RUN/."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "pylib"))

import memory_compare  # noqa: E402
import qmp_migration as mig  # noqa: E402
from xvtest.guest import Guest  # noqa: E402

WORKROOT = "/tmp/xdpvhost-qemu-alone"
BUSY = ("ping -i 0.05 127.0.0.1 > /tmp/p.out 2>&1 & echo XV-BUSY; "
        "while :; do date > /tmp/d; sleep 0.01; done")


def one_run(image: str, wd: str, cancel: bool) -> tuple[bool, str, list[str]]:
    common = dict(mem="256M", cmd=[BUSY], workdir=wd, quiet=True, accel="tcg")
    guests = []
    try:
        src = Guest(image, None, name="src", **common).start()
        guests.append(src)
        src.wait_for(r"^XV-BUSY", 120)  # booted and busy
        if cancel:
            port = mig.free_port()
            dst0 = Guest(image, None, name="dst0", qemu_args=mig.incoming_args(port), **common).start()
            guests.append(dst0)
            time.sleep(1.5)
            mig.start(src, port, max_bandwidth=1 << 20)  # 1 MiB/s: cannot finish
            time.sleep(2.0)
            src.qmp("migrate_cancel")
            mig.wait(src, 30)
            dst0.kill()
            src.qmp("migrate-set-parameters", **{"max-bandwidth": 1 << 30})
            time.sleep(1.0)
        port = mig.free_port()
        dst = Guest(image, None, name="dst", qemu_args=mig.incoming_args(port) + ["-S"],
                    **common).start()
        guests.append(dst)
        time.sleep(1.5)
        mig.start(src, port)
        st = mig.wait(src, 120)
        if st.get("status") != "completed":
            return False, f"migration {st.get('status')}", []
        return memory_compare.compare(src, dst, limit=5)
    finally:
        for g in guests:
            g.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--image", required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--cancel", action="store_true", help="a cancelled migration first")
    args = ap.parse_args()
    lost = 0
    for run in range(1, args.runs + 1):
        wd = os.path.join(WORKROOT, str(run))
        shutil.rmtree(wd, ignore_errors=True)
        os.makedirs(wd)
        same, summary, details = one_run(args.image, wd, args.cancel)
        print(f"run {run} cancel={args.cancel}: {summary}", flush=True)
        if not same:
            lost += 1
            for line in details[1:]:
                print("   ", line, flush=True)
    print(f"{lost} of {args.runs} runs lost pages")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
