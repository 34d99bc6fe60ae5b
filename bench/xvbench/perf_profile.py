"""Where the backend's time goes: `perf record` on the software clock (these
VMs have no PMU) over the backend's processes while one scenario runs, then a
flat `perf report` (self time by symbol, kernel and user) next to the data."""

import os
import re
import signal
import subprocess

FREQ = 2999  # samples/s per CPU: enough for a 5 s window, light enough not to shift the result


class PerfRecorder:
    def __init__(self, out_dir, perf="perf"):
        self.out_dir = out_dir
        self.perf = perf
        os.makedirs(out_dir, exist_ok=True)

    @staticmethod
    def file_stem(rep, backend, scenario, params):
        tail = "_".join(f"{k}{v}" for k, v in sorted(params.items()))
        return re.sub(r"[^A-Za-z0-9_.-]", "", f"r{rep}-{backend}-{scenario}" + (f"-{tail}" if tail else ""))

    def around(self, pids, stem, fn):
        """fn() with perf recording pids (every thread); returns fn's result
        with the report's path added."""
        if not pids:
            return fn()
        data = os.path.join(self.out_dir, stem + ".data")
        rec = subprocess.Popen([self.perf, "record", "-q", "-e", "cpu-clock", "-F", str(FREQ), "-g",
                                "-p", ",".join(map(str, pids)), "-o", data],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            res = fn()
        finally:
            rec.send_signal(signal.SIGINT)
            try:
                _, err = rec.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                rec.kill()
                _, err = rec.communicate()
        report = os.path.join(self.out_dir, stem + ".txt")
        if rec.returncode not in (0, -signal.SIGINT) or not os.path.exists(data):
            res["perf"] = f"perf record failed ({rec.returncode}): {err.strip()[-300:]}"
            return res
        with open(report, "w") as f:
            subprocess.run([self.perf, "report", "-i", data, "--stdio", "--no-children",
                            "--sort", "comm,dso,sym", "--percent-limit", "0.5", "-g", "none"],
                           stdout=f, stderr=subprocess.DEVNULL, check=False)
        res["perf"] = report
        return res
