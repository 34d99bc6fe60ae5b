"""DPDK 22.11 dpdk-testpmd for tests: its command line (EAL arguments for a
process without PCI devices or hugepages; the net_virtio_user vdev that makes
it a vhost-user frontend, i.e. a guest without a VM; the net_vhost vdev that
makes it a vhost-user backend), and Testpmd, such a
guest run non-interactively with --stats-period and stopped with SIGINT,
after which it prints its forward statistics. (testpmd_console.py drives
one interactively.)"""

import os
import re
import signal
import subprocess
import time

from .process import Child, die_with_parent, read_text


def eal_args(file_prefix, cores, memory_mb=512, main_lcore=None):
    """`dpdk-testpmd` and its EAL arguments: no PCI probing (testpmd would
    take the machine's NIC), no hugepages, shareable memory (a vhost-user
    backend maps it), EAL errors only. cores is an -l list ("0,1") or an
    --lcores map ("0@1,1@1")."""
    return ["dpdk-testpmd", "--no-pci", "--no-huge", "-m", str(memory_mb),
            f"--file-prefix={file_prefix}", *(["--lcores", cores] if "@" in cores else ["-l", cores]),
            *([f"--main-lcore={main_lcore}"] if main_lcore is not None else []),
            "--log-level=lib.eal:error"]


def virtio_user_vdev(socket_path, mac, queue_size=1024, server=False, extra=""):
    """The vdev of a vhost-user frontend on socket_path (server: testpmd listens)."""
    vdev = f"net_virtio_user0,path={socket_path},queue_size={queue_size},mac={mac}"
    if server:
        vdev += ",server=1"
    if extra:
        vdev += "," + extra
    return vdev


def vhost_vdev(socket_path, index=0, queues=1, client=None):
    """The vdev of a vhost-user backend port (net_vhost) on socket_path;
    client True: testpmd connects, False: it listens, None: the PMD's default."""
    vdev = f"net_vhost{index},iface={socket_path},queues={queues}"
    if client is not None:
        vdev += f",client={int(client)}"
    return vdev


def taken_mismatch(sent, taken, queue_size=1024):
    """"" when `taken` (frames a backend took from a testpmd guest's TX ring)
    fits `sent` (the frames that testpmd counted as sent), else why not.
    testpmd counts a frame as sent once it is on its virtio TX ring; when it
    quits, GET_VRING_BASE ends the ring, and what the backend had not taken
    yet is abandoned with it: fewer than a ring (queue_size) of frames."""
    if taken > sent:
        return f"the backend took {taken} frames, more than the {sent} testpmd sent"
    if sent - taken >= queue_size:
        return (f"{sent - taken} frames unaccounted (testpmd sent {sent}, the backend took "
                f"{taken}): a ring ({queue_size}) or more")
    return ""


class Testpmd(Child):
    def __init__(self, name, socket_path, mac, mode, workdir, lcores="0,1", peer=None,
                 server=False, queue_size=1024, extra=(), txpkts=64, netns=None, memory_mb=512,
                 vdev_extra="", main_lcore=None, file_prefix=None):
        self.name = name
        self.workdir = workdir
        self.log_path = os.path.join(workdir, f"testpmd-{name}.log")
        vdev = virtio_user_vdev(socket_path, mac, queue_size, server, vdev_extra)
        self.cmd = [*eal_args(file_prefix or f"xvt-{name}", lcores, memory_mb, main_lcore),
                    f"--vdev={vdev}", "--", f"--forward-mode={mode}", "--stats-period=1",
                    "--nb-cores=1", "--total-num-mbufs=8192", f"--txpkts={txpkts}"]
        if peer:
            self.cmd.append(f"--eth-peer=0,{peer}")
        self.cmd += list(extra)
        if netns:
            self.cmd = ["ip", "netns", "exec", netns] + self.cmd
        self.proc = None

    def start(self):
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=die_with_parent)
        return self

    def wait_forwarding(self, timeout=30.0):
        """Until testpmd reports its port started (the device negotiated)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.output()
            if "Press enter to exit" in text or "Port statistics" in text:
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"testpmd {self.name} exited:\n{text[-3000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"testpmd {self.name} did not start:\n{self.output()[-3000:]}")

    def stop(self, timeout=20.0):
        """SIGINT, then the final counters: {'rx': n, 'tx': n, 'tx_dropped': n}."""
        if self.alive():
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.final_stats()

    def kill(self):
        if self.alive():
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def output(self):
        return read_text(self.log_path)

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
