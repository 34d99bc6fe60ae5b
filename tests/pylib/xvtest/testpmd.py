"""DPDK 22.11 dpdk-testpmd as a vhost-user frontend (net_virtio_user): a
guest without a VM. Runs non-interactively with --stats-period and is
stopped with SIGINT, after which it prints its forward statistics."""

import os
import re
import signal
import subprocess
import time


class Testpmd:
    def __init__(self, name, socket_path, mac, mode, workdir, lcores="0,1", peer=None,
                 server=False, queue_size=1024, extra=(), txpkts=64, netns=None, memory_mb=512,
                 vdev_extra="", main_lcore=None, file_prefix=None):
        self.name = name
        self.workdir = workdir
        self.log_path = os.path.join(workdir, f"testpmd-{name}.log")
        vdev = f"net_virtio_user0,path={socket_path},queue_size={queue_size},mac={mac}"
        if server:
            vdev += ",server=1"
        if vdev_extra:
            vdev += "," + vdev_extra
        self.cmd = ["dpdk-testpmd", "--no-pci", "--no-huge", "-m", str(memory_mb),
                    f"--file-prefix={file_prefix or 'xvt-' + name}", "-l", lcores, "--log-level=lib.eal:error",
                    *([f"--main-lcore={main_lcore}"] if main_lcore is not None else []),
                    f"--vdev={vdev}", "--", f"--forward-mode={mode}", "--stats-period=1",
                    "--nb-cores=1", "--total-num-mbufs=8192", f"--txpkts={txpkts}"]
        if peer:
            self.cmd.append(f"--eth-peer=0,{peer}")
        self.cmd += list(extra)
        if netns:
            self.cmd = ["ip", "netns", "exec", netns] + self.cmd
        self.proc = None

    def start(self):
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def wait_forwarding(self, timeout=30.0):
        """Until testpmd reports its port started (the device negotiated)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.output()
            if "Press enter to exit" in text or "Port statistics" in text:
                return
            if self.proc.poll() is not None:
                raise RuntimeError(f"testpmd {self.name} exited:\n{text[-3000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"testpmd {self.name} did not start:\n{self.output()[-3000:]}")

    def stop(self, timeout=20.0):
        """SIGINT, then the final counters: {'rx': n, 'tx': n, 'tx_dropped': n}."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()
        return self.final_stats()

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc and not self.log.closed:
            self.log.close()

    def output(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def final_stats(self):
        text = self.output()
        block = text.rsplit("Forward statistics for port 0", 1)
        if len(block) < 2:
            raise RuntimeError(f"testpmd {self.name} printed no final statistics:\n{text[-3000:]}")
        rx = re.search(r"RX-packets:\s*(\d+)", block[1])
        tx = re.search(r"TX-packets:\s*(\d+)\s+TX-dropped:\s*(\d+)", block[1])
        return {"rx": int(rx.group(1)), "tx": int(tx.group(1)), "tx_dropped": int(tx.group(2))}

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()
