"""What one scenario found: its checks (each PASS/FAIL, or SKIP when the
control socket does not answer), its figures, notes, and the verdict
(PASS, FAIL or PENDING), printed as it goes and summed up in a table."""

from __future__ import annotations

import sys
import time

PASS, FAIL, PENDING = "PASS", "FAIL", "PENDING"


class Pending(Exception):
    """The scenario cannot run yet (e.g. the uplink is not implemented)."""


class ScenarioResult:
    def __init__(self, name: str, title: str, out=sys.stdout):
        self.name = name
        self.title = title
        self.out = out
        self.checks: list[tuple[str, str, str]] = []   # (name, PASS|FAIL|SKIP, detail)
        self.figures: dict[str, object] = {}
        self.notes: list[str] = []
        self.status: str | None = None
        self.reason = ""
        self.started = time.monotonic()
        self.seconds = 0.0

    def say(self, text: str):
        print(f"  [{self.name}] {text}", file=self.out, flush=True)

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        verdict = PASS if ok else FAIL
        self.checks.append((name, verdict, detail))
        self.say(f"{verdict:4} {name}" + (f": {detail}" if detail else ""))
        return bool(ok)

    def skip(self, name: str, why: str):
        self.checks.append((name, "SKIP", why))
        self.say(f"SKIP {name}: {why}")

    def figure(self, name: str, value):
        self.figures[name] = value
        self.say(f"figure {name} = {value}")

    def note(self, text: str):
        self.notes.append(text)
        self.say(f"note: {text}")

    def failed_checks(self) -> list[str]:
        return [n for n, v, _ in self.checks if v == FAIL]

    def finish(self, error: BaseException | None = None):
        self.seconds = time.monotonic() - self.started
        if isinstance(error, Pending):
            self.status, self.reason = PENDING, str(error)
        elif error is not None:
            self.status = FAIL
            self.reason = f"{type(error).__name__}: {error}"
        elif self.failed_checks():
            self.status = FAIL
            self.reason = "failed: " + ", ".join(self.failed_checks())
        elif not self.checks:
            self.status, self.reason = FAIL, "no check ran"
        else:
            self.status = PASS
        if error is not None and not isinstance(error, Pending):
            self.say("ERROR " + str(error).replace("\n", "\n    "))
        print(f"== {self.name}: {self.status} ({self.seconds:.1f} s)"
              + (f" - {self.reason.splitlines()[0]}" if self.reason else ""), file=self.out, flush=True)

    def as_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "status": self.status, "reason": self.reason,
                "seconds": round(self.seconds, 1), "figures": self.figures,
                "checks": [{"name": n, "verdict": v, "detail": d} for n, v, d in self.checks],
                "notes": self.notes}


def print_summary(results: list[ScenarioResult], out=sys.stdout):
    rows = []
    for r in results:
        figs = ", ".join(f"{k}={v}" for k, v in r.figures.items() if k in _TABLE_FIGURES)
        rows.append((r.name, r.status or "?", f"{r.seconds:.0f}s",
                     figs if r.status != PENDING else r.reason.splitlines()[0][:110]))
    w = [max(len(x[i]) for x in rows + [("scenario", "result", "time", "")]) for i in range(3)]
    print("", file=out)
    print(f"{'scenario':<{w[0]}}  {'result':<{w[1]}}  {'time':>{w[2]}}  figures", file=out)
    print(f"{'-' * w[0]}  {'-' * w[1]}  {'-' * w[2]}  {'-' * 40}", file=out)
    for name, status, secs, figs in rows:
        print(f"{name:<{w[0]}}  {status:<{w[1]}}  {secs:>{w[2]}}  {figs}", file=out)
    for r in results:
        if r.status == FAIL:
            print(f"{r.name}: {r.reason.splitlines()[0]}", file=out)
    n_pass = sum(r.status == PASS for r in results)
    n_fail = sum(r.status == FAIL for r in results)
    n_pend = sum(r.status == PENDING for r in results)
    print(f"{n_pass} passed, {n_fail} failed" + (f", {n_pend} pending" if n_pend else ""),
          file=out, flush=True)


# Figures short enough for the summary table (the full set is printed per
# scenario and saved in results.json).
_TABLE_FIGURES = {
    "boot_s", "rtt_ms", "tcp_mbps", "tcp_rev_mbps", "retrans", "retrans_rev", "udp_mbps",
    "udp_loss_pct", "fds", "rss_kb", "recovery_s", "cycles",
}
