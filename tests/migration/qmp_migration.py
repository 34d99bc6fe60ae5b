"""Live migration of a test guest through QMP: the destination QEMU waits
with -incoming on a loopback TCP port, the source is told to migrate there,
and query-migrate is polled until the migration completes, fails or is
cancelled. The figures QEMU reports (total time, downtime, setup time, RAM
transferred) are returned as they are."""

from __future__ import annotations

import socket
import time

from xvtest.guest import Guest, GuestError


def free_port() -> int:
    """A TCP port on loopback nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def incoming_args(port: int) -> list[str]:
    return ["-incoming", f"tcp:127.0.0.1:{port}"]


def start(src: Guest, port: int, max_bandwidth: int | None = None, downtime_ms: int | None = None):
    params = {}
    if max_bandwidth is not None:
        params["max-bandwidth"] = max_bandwidth
    if downtime_ms is not None:
        params["downtime-limit"] = downtime_ms
    if params:
        src.qmp("migrate-set-parameters", **params)
    src.qmp("migrate", uri=f"tcp:127.0.0.1:{port}")


def status(g: Guest) -> dict:
    return g.qmp("query-migrate").get("return", {})


def wait(src: Guest, timeout: float = 120.0, until=("completed", "failed", "cancelled")) -> dict:
    """query-migrate of the source once its status is one of `until`."""
    deadline = time.monotonic() + timeout
    while True:
        st = status(src)
        if st.get("status") in until:
            return st
        if time.monotonic() >= deadline:
            raise GuestError(f"migration still {st.get('status')} after {timeout:.0f} s: {st}")
        time.sleep(0.1)


def run_state(g: Guest) -> str:
    """query-status: 'running', 'inmigrate', 'postmigrate', 'paused', ..."""
    return g.qmp("query-status").get("return", {}).get("status", "?")


def wait_running(g: Guest, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        s = run_state(g)
        if s == "running" or time.monotonic() >= deadline:
            return s
        time.sleep(0.05)


def figures(st: dict) -> dict:
    ram = st.get("ram", {})
    return {"total_ms": st.get("total-time"), "downtime_ms": st.get("downtime"),
            "setup_ms": st.get("setup-time"), "ram_mib": round(ram.get("transferred", 0) / 2**20, 1),
            "dirty_sync": ram.get("dirty-sync-count")}
