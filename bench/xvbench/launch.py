"""How the harness starts processes: inside a namespace, pinned to a CPU,
at a nice level, with bpffs mounted, in a CPU-accounting cgroup; and the
registry that kills whatever is still running when the harness ends
(normally, on an error or on Ctrl-C)."""

import os
import signal
import subprocess

from xvtest.netns import with_bpffs  # tests/pylib, put on sys.path by run.py


def command(cmd, netns=None, cpu=None, nice=None, bpffs=False):
    cmd = list(cmd)
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu)] + cmd
    if nice is not None:
        cmd = ["nice", "-n", str(nice)] + cmd
    if bpffs:
        cmd = with_bpffs(cmd)
    if netns:
        cmd = ["ip", "netns", "exec", netns] + cmd
    return cmd


class Registry:
    """Every long-lived child (Popen or console) the harness started."""

    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)
        return item

    def discard(self, item):
        if item in self.items:
            self.items.remove(item)

    def kill_all(self):
        for item in reversed(self.items):
            try:
                if hasattr(item, "kill"):
                    item.kill()
                elif isinstance(item, subprocess.Popen) and item.poll() is None:
                    os.killpg(item.pid, signal.SIGKILL)
                    item.wait()
            except Exception:  # noqa: BLE001 - teardown keeps going
                pass
        self.items.clear()


REGISTRY = Registry()
