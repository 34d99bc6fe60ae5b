#!/usr/bin/env python3
"""Boot a test guest against a vhost-user backend and watch its console:
the command line of xvtest.guest (tests/pylib), where the Guest class and
its helpers live. `import qemu_guest` still gives those names.

    python3 qemu_guest.py --image DIR --socket SOCK --ip 10.77.0.2/24 \\
        --run ping,10.77.0.1 --cmd 'cat /proc/interrupts'

Exit status: the guest's rc (XV-DONE rc=), 124 on timeout, 125 when QEMU
died first. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import sys
from typing import Sequence

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from xvtest.guest import *  # noqa: E402,F401,F403  (the names `import qemu_guest` gives)
from xvtest.guest import Guest, GuestExited, GuestTimeout, probe_kvm  # noqa: E402


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description="Boot a test guest against a vhost-user socket and watch its console.")
    p.add_argument("--image", required=True, help="directory made by build_image.sh")
    p.add_argument("--socket", help="vhost-user socket (omit for a guest without NIC)")
    p.add_argument("--server", action="store_true",
                   help="QEMU listens on --socket (backend connects as client)")
    p.add_argument("--reconnect", type=int, help="QEMU client: reconnect every N s")
    p.add_argument("--name", default="guest")
    p.add_argument("--mac")
    p.add_argument("--ip", help="ADDR/PREFIX for the guest NIC")
    p.add_argument("--peer", help="default peer address for scenarios (xv.peer)")
    p.add_argument("--mtu", type=int)
    p.add_argument("--gw")
    p.add_argument("--neigh", action="append", default=[], help="static ARP entry IP@MAC")
    p.add_argument("--offload", help="ethtool -K settings, e.g. tx=off,sg=off")
    p.add_argument("--queues", type=int, help="ethtool -L combined N in the guest")
    p.add_argument("--netdev-queues", type=int, default=1,
                   help="vhost-user queue pairs (mq=on when > 1)")
    p.add_argument("--smp", type=int)
    p.add_argument("--mem", default="512M")
    p.add_argument("--mrg-rxbuf", choices=["on", "off"])
    p.add_argument("--event-idx", choices=["on", "off"])
    p.add_argument("--indirect-desc", choices=["on", "off"])
    p.add_argument("--device-opt", action="append", default=[], metavar="KEY=VALUE",
                   help="extra virtio-net-pci property")
    p.add_argument("--vectors", type=int, help="MSI-X vectors (default: 0 under TCG)")
    p.add_argument("--accel", choices=["auto", "kvm", "tcg"])
    p.add_argument("--run", action="append", default=[], metavar="SCENARIO[,ARG...]",
                   help="scenario step: ping,PEER[,COUNT] | iperf3-client,PEER[,SECS[,ARGS]] | "
                        "iperf3-server | wait-peer,PEER | nic | sleep,N | serve")
    p.add_argument("--cmd", action="append", default=[], help="shell snippet run in the guest")
    p.add_argument("--allow-reboot", action="store_true")
    p.add_argument("--debug", action="store_true", help="keep all kernel messages on the console")
    p.add_argument("--kernel-arg", action="append", default=[],
                   help="extra kernel parameter")
    p.add_argument("--qemu-arg", action="append", default=[])
    p.add_argument("--workdir", help="where console/QEMU logs go (default: a new /tmp dir)")
    p.add_argument("--timeout", type=float, default=600, help="seconds to wait for XV-DONE")
    p.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    p.add_argument("--print-cmdline", action="store_true", help="print the QEMU command and exit")
    p.add_argument("--probe-kvm", action="store_true", help="only probe whether KVM works")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    a = _parse_args(argv)
    if a.probe_kvm:
        ok, reason = probe_kvm(a.image, quiet=True)
        print(json.dumps({"kvm": ok, "reason": reason}))
        return 0 if ok else 1
    opts = dict(kv.split("=", 1) for kv in a.device_opt)
    g = Guest(a.image, a.socket, name=a.name, server=a.server, reconnect=a.reconnect,
              mac=a.mac, ip=a.ip, peer=a.peer, mtu=a.mtu, gw=a.gw, neigh=a.neigh,
              offload=a.offload, queues=a.queues, run=a.run, cmd=a.cmd,
              netdev_queues=a.netdev_queues, smp=a.smp, mem=a.mem,
              mrg_rxbuf=a.mrg_rxbuf, event_idx=a.event_idx, indirect_desc=a.indirect_desc,
              device_opts=opts, vectors=a.vectors, accel=a.accel,
              allow_reboot=a.allow_reboot, debug=a.debug,
              kernel_args=a.kernel_arg,
              qemu_args=a.qemu_arg, workdir=a.workdir, echo=sys.stdout)
    if a.print_cmdline:
        print(shlex.join(g.build_cmdline()))
        if g._own_workdir:
            shutil.rmtree(g.workdir, ignore_errors=True)
        return 0

    def on_signal(signum, _frame):
        g.kill()
        sys.exit(128 + signum)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    rc = 0
    with g:
        g.start()
        try:
            rc = g.wait_done(a.timeout)
        except GuestTimeout as e:
            print(f"\nqemu_guest: {str(e).splitlines()[0]}", file=sys.stderr)
            rc = 124
        except GuestExited as e:
            print(f"\nqemu_guest: {str(e).splitlines()[0]}\n{g.qemu_log()[-2000:]}", file=sys.stderr)
            rc = 125
    if a.json:
        print(json.dumps(g.summary(), indent=2))
    else:
        nic = g.results("nic")
        if nic:
            print(f"qemu_guest: features {' '.join(nic[-1]['feature_names'])}", file=sys.stderr)
        print(f"qemu_guest: accel={g.accel} boot_s={g.boot_time()} rc={rc}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
