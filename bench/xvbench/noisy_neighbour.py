"""The noisy-neighbour scenario: the well-behaved guest's
guest->outside rate without and with a hostile guest on a second port of the
same service thread, windows alternating (without, with, without, with, ...)
in one run, reported as the median of the per-pair ratios with / without.

The hostile guest is xvb-hostile-guest (bench/tools, the test frontend of
tests/frontend): a port "evil" is added with port.add on thread 0 (the
backend's only service thread) for the scenario and removed afterwards; in a
"with" window the tool is connected and attacking, in a "without" window it
is not running (the port exists and waits for a frontend). It runs on the
guest's core (it sleeps between rounds; its CPU is recorded as the "hostile"
group) so that the backend's core is the well-behaved guest's bottleneck in
both windows."""

import json
import os
import select
import signal
import statistics
import subprocess
import time

from . import launch, scenarios
from .load_tools import ToolError, tool_path

EVIL_PORT = "evil"
EVIL_MAC = "52:54:00:77:00:66"


class HostileGuest:
    def __init__(self, ctx, socket_path, attack, period_us):
        self.cmd = launch.command([tool_path(ctx.tools, "xvb-hostile-guest"), "--socket", socket_path,
                                   "--attack", attack, "--period-us", str(period_us)],
                                  cpu=ctx.cfg.guest_cpu, nice=ctx.cfg.nice or None)
        self.log_path = os.path.join(ctx.workdir, f"hostile-{attack}.log")
        self.preexec = ctx.groups["hostile"].preexec()
        self.proc = None

    def start(self, timeout=10):
        self.err = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     text=True, bufsize=1, start_new_session=True, preexec_fn=self.preexec)
        launch.REGISTRY.add(self)
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if not line.strip().startswith("{"):
            self.kill()
            raise ToolError(f"xvb-hostile-guest did not negotiate ({line.strip() or 'no answer'}); "
                            f"see {self.log_path}")
        return self

    def stop(self):
        """Ends the attack (stdin closed) and returns the tool's report."""
        try:
            out, _ = self.proc.communicate(timeout=10)  # closes stdin: the tool ends its attack
        except subprocess.TimeoutExpired:
            self.kill()
            raise ToolError(f"xvb-hostile-guest did not stop; see {self.log_path}") from None
        finally:
            self.err.close()
            launch.REGISTRY.discard(self)
        lines = [l for l in out.splitlines() if l.strip()]
        try:
            return json.loads(lines[-1])
        except (IndexError, ValueError):
            raise ToolError(f"xvb-hostile-guest ended without a report ({self.proc.returncode})") from None

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        launch.REGISTRY.discard(self)


def evil_counters(sut):
    stats = sut.stats() or {}
    port = (stats.get("ports") or {}).get(EVIL_PORT) or {}
    return port


def noisy_neighbour(ctx, sut, attack, size, pairs, seconds, period_us):
    """`pairs` (without, with) windows of `seconds` each; the order within a
    pair alternates so that neither side always comes first."""
    socket_path = os.path.join(ctx.workdir, "evil.sock")
    if os.path.exists(socket_path):
        os.unlink(socket_path)
    sut.daemon.call("port.add", name=EVIL_PORT, socket=socket_path, mode="server", mac=EVIL_MAC,
                    uplink="up0", thread=0)
    windows = []
    try:
        for p in range(pairs):
            order = ("without", "with") if p % 2 == 0 else ("with", "without")
            for side in order:
                hostile = None
                e0 = evil_counters(sut)
                if side == "with":
                    hostile = HostileGuest(ctx, socket_path, attack, period_us).start()
                    time.sleep(0.2)  # the attack is under way before the window
                try:
                    res = scenarios.guest_to_outside(ctx, sut, size, seconds)
                finally:
                    report = hostile.stop() if hostile else None
                e1 = evil_counters(sut)
                windows.append({"pair": p, "side": side, "pps": res["pps"], "offered_pps": res["offered_pps"],
                                "backend_ns_per_packet": res["ns_per_packet"].get("backend"),
                                "cpu": res["cpu"], "window_s": res["window_s"],
                                "hostile": report, "evil_port": scenarios.counter_delta(e0, e1),
                                "evil_state": sut.daemon.port_state(EVIL_PORT)})
    finally:
        try:
            sut.daemon.call("port.remove", name=EVIL_PORT)
        except Exception:  # noqa: BLE001 - the slot's teardown stops the daemon anyway
            pass
    ratios, cost_ratios = [], []
    for p in range(pairs):
        w = {x["side"]: x["pps"] for x in windows if x["pair"] == p}
        if w.get("without"):
            ratios.append(w["with"] / w["without"])
        # The backend's CPU per well-behaved packet: what the attack costs
        # the service thread, also where the machine's other load rather
        # than the thread's work sets how much CPU the thread gets.
        c = {x["side"]: x["backend_ns_per_packet"] for x in windows if x["pair"] == p}
        if c.get("without") and c.get("with"):
            cost_ratios.append(c["with"] / c["without"])
    without = [x["pps"] for x in windows if x["side"] == "without"]
    with_ = [x["pps"] for x in windows if x["side"] == "with"]
    ratio = statistics.median(ratios) if ratios else None
    return {"attack": attack, "size": size, "period_us": period_us,
            "pps_without": round(statistics.median(without)) if without else None,
            "pps_with": round(statistics.median(with_)) if with_ else None,
            "ratio": round(ratio, 4) if ratio is not None else None,
            "pair_ratios": [round(r, 4) for r in ratios],
            "backend_ns_per_packet_ratio": round(statistics.median(cost_ratios), 4) if cost_ratios else None,
            "backend_cost_pair_ratios": [round(r, 4) for r in cost_ratios],
            "windows": windows}
