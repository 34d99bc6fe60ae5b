"""CPU time of a group of processes from a cgroup: cgroup v1 cpuacct
(cpuacct.usage, .usage_user, .usage_sys in ns) where that is mounted, else
cgroup v2 (cpu.stat usage_usec, user_usec, system_usec). Processes are
placed by pid (the whole thread group moves; children inherit the group).
No hardware PMU on these VMs: CPU time is all there is, no cycles."""

import os
import time

V1_ROOT = "/sys/fs/cgroup/cpuacct"
V2_ROOT = "/sys/fs/cgroup"


def detect():
    """('v1', root) or ('v2', root) or (None, reason)."""
    if os.path.exists(os.path.join(V1_ROOT, "cpuacct.usage")):
        return "v1", V1_ROOT
    if os.path.exists(os.path.join(V2_ROOT, "cgroup.controllers")):
        return "v2", V2_ROOT
    unified = os.path.join(V2_ROOT, "unified")
    if os.path.exists(os.path.join(unified, "cgroup.controllers")):
        return "v2", unified
    return None, "no cpuacct (v1) or cgroup2 hierarchy found"


def pmu_available():
    """(available, reason). perf_event_open of a hardware cycles counter is
    what 'perf stat' needs; these VMs expose no PMU (no 'cpu' event source)."""
    if os.path.exists("/sys/bus/event_source/devices/cpu"):
        return True, "hardware PMU present (/sys/bus/event_source/devices/cpu)"
    return False, ("no hardware PMU (/sys/bus/event_source/devices/cpu missing): cycles and "
                   "instructions are unavailable; CPU cost comes from cgroup CPU time")


class CpuGroup:
    def __init__(self, name):
        self.kind, self.root = detect()
        if self.kind is None:
            raise RuntimeError(self.root)
        self.path = os.path.join(self.root, name)
        os.makedirs(self.path, exist_ok=True)

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def preexec(self):
        """A preexec_fn placing the child into this group before it execs."""
        procs = os.path.join(self.path, "cgroup.procs")

        def place():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
        return place

    def read(self):
        """{'t': monotonic s, 'usage_ns', 'user_ns', 'sys_ns'}."""
        t = time.monotonic()
        if self.kind == "v1":
            def rd(f):
                with open(os.path.join(self.path, f)) as fh:
                    return int(fh.read().strip())
            return {"t": t, "usage_ns": rd("cpuacct.usage"), "user_ns": rd("cpuacct.usage_user"),
                    "sys_ns": rd("cpuacct.usage_sys")}
        stat = {}
        with open(os.path.join(self.path, "cpu.stat")) as f:
            for line in f:
                k, v = line.split()
                stat[k] = int(v)
        return {"t": t, "usage_ns": stat["usage_usec"] * 1000, "user_ns": stat["user_usec"] * 1000,
                "sys_ns": stat["system_usec"] * 1000}

    def pids(self):
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def remove(self):
        """Moves any leftover process to the root group, then removes the group."""
        for pid in self.pids():
            try:
                with open(os.path.join(self.root, "cgroup.procs"), "w") as f:
                    f.write(str(pid))
            except OSError:
                pass
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.05)


def delta(before, after):
    """CPU used between two reads: seconds of wall time, ns used, fraction of one core."""
    wall = after["t"] - before["t"]
    used = after["usage_ns"] - before["usage_ns"]
    return {"wall_s": round(wall, 6), "cpu_ns": used,
            "user_ns": after["user_ns"] - before["user_ns"],
            "sys_ns": after["sys_ns"] - before["sys_ns"],
            "core_fraction": round(used / (wall * 1e9), 4) if wall > 0 else None}
