"""One JSON record per run (one line of results.jsonl): what ran, where,
under which load, and what it measured or why it could not."""

import datetime
import json
import os
import platform
import subprocess


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[:3]
    except OSError:
        return None


def environment():
    env = {"kernel": platform.release(), "cpus": os.cpu_count(), "python": platform.python_version()}
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "dpdk"], capture_output=True, text=True)
        env["dpdk"] = out.stdout.strip() or None
    except OSError:
        env["dpdk"] = None
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu_model"] = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), None)
    except OSError:
        pass
    return env


class Recorder:
    def __init__(self, path, run_id, profile):
        self.path = path
        self.run_id = run_id
        self.profile = profile
        self.records = []
        self.f = open(path, "a")

    def write(self, rep, backend, scenario, params, status, result=None, error=None, load_before=None,
              extra=None):
        rec = {"run_id": self.run_id, "profile": self.profile,
               "time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "rep": rep, "backend": backend, "scenario": scenario, "params": params or {},
               "status": status, "loadavg_before": load_before, "loadavg_after": loadavg()}
        if result is not None:
            rec["result"] = result
        if error is not None:
            rec["error"] = error
        if extra:
            rec.update(extra)
        self.records.append(rec)
        self.f.write(json.dumps(rec, sort_keys=False) + "\n")
        self.f.flush()
        return rec

    def close(self):
        self.f.close()
