"""The vhost-user backend of one node of a migration scenario, in the
node's namespace, serving one guest port on a unix socket (QEMU connects
to it as client, reconnect=1) and bridging it to the node's uplink veth:

    xdpvhost  xdpvhostd, port "vm" (AF_XDP uplink up0, queue 0)
    dpdk      DPDK 22.11 dpdk-testpmd, io forwarding between net_vhost0
              (the guest port; DPDK's vhost library does the dirty logging
              and answers SEND_RARP) and net_af_packet0 on up0 (the
              reference of the issue)

start() returns once the backend listens; alive(), log_text(), stop()."""

from __future__ import annotations

import os
import subprocess
import time

from network import UPLINK_IF
from xvtest.process import die_with_parent, read_text
from xvtest.testpmd import eal_args, vhost_vdev


class XdpvhostNode:
    kind = "xdpvhost"

    def __init__(self, ctx, workdir: str, ns: str, socket_path: str, ports: list[dict]):
        self.socket_path = socket_path
        self.daemon = ctx.daemon(workdir, ports,
                                 uplinks=[{"name": "up0", "interface": UPLINK_IF, "queues": [0]}],
                                 netns=ns)

    def start(self):
        self.daemon.start()
        return self

    def alive(self) -> bool:
        return self.daemon.alive()

    def log_text(self) -> str:
        return self.daemon.log_text()

    def stop(self):
        try:
            self.daemon.stop()
        except TimeoutError:
            pass


class DpdkNode:
    kind = "dpdk"

    def __init__(self, ctx, workdir: str, ns: str, socket_path: str, prefix: str):
        self.socket_path = socket_path
        self.log_path = os.path.join(workdir, f"testpmd-{prefix}.log")
        self.cmd = ["ip", "netns", "exec", ns,
                    *eal_args(prefix, "0,1", memory_mb=256),
                    f"--vdev={vhost_vdev(socket_path, 0, 1, client=False)}",
                    f"--vdev=net_af_packet0,iface={UPLINK_IF}",
                    "--", "--forward-mode=io", "--nb-cores=1", "--total-num-mbufs=8192",
                    "--stats-period=3600", "--auto-start"]
        self.ctx = ctx
        self.proc: subprocess.Popen | None = None

    def start(self):
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        with open(self.log_path, "wb") as f:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=f,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=die_with_parent)
        self.ctx.own(self.proc)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.socket_path):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"testpmd did not listen on {self.socket_path}:\n"
                                   f"{self.log_text()[-2000:]}")
            time.sleep(0.1)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_text(self) -> str:
        return read_text(self.log_path)

    def stop(self):
        if self.alive():
            self.proc.send_signal(2)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
