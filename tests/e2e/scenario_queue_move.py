"""Queues moved between service threads under real TCP traffic.

queue-move  A 2-vCPU guest with 2 queue pairs (port "queues": 2) behind the
            AF_XDP uplink (queue 0) of a daemon with 2 service threads, in
            the namespaces of the multiqueue scenarios (mq-node, mq-peer).
            Two 32 MiB HTTP transfers run at once, guest -> peer and peer ->
            guest, while the test moves the port's two queue groups and the
            uplink's queue to the other thread, one after another, over the
            control socket (queue.move) until both transfers are done. Each
            file's sha256 is compared at the far end; at least 20 moves must
            fall inside the transfers, every move must succeed, and no frame
            may be dropped as port_gone (a frame that reached a thread its
            port had left).
"""

from __future__ import annotations

import os
import threading
import time

from e2e_context import Context, mac
from guest_checks import check_alive, check_clean_stop, check_transfer, wait_done, wait_result
from scenario_multiqueue import PEER_NS, node_with_port
from scenario_result import ScenarioResult
from scenario_uplink import _peer_blob, _peer_fetch
from xvtest.control import RpcError
from xvtest.guest import GuestError

GUEST_IP = "10.78.1.3"
PEER_IP = "10.78.1.100"
BLOB_MB = 32
MIN_MOVES = 20
# What is moved, in turn: the queue group of pair 0, that of pair 1, the
# uplink's queue 0.
TARGETS = ({"port": "vm1", "pair": 0}, {"port": "vm1", "pair": 1}, {"uplink": "up0", "queue": 0})


class Mover(threading.Thread):
    """Moves each target to the other thread in turn until stopped; records
    when each move ended and every error."""

    def __init__(self, d, pause_s: float = 0.02):
        super().__init__(daemon=True)
        self.d = d
        self.pause_s = pause_s
        self.stop = threading.Event()
        self.moved: list[float] = []  # time.monotonic() at the end of each move
        self.took_us: list[int] = []
        self.errors: list[str] = []

    def run(self):
        thread = {i: 1 for i in range(len(TARGETS))}
        i = 0
        while not self.stop.is_set():
            target = TARGETS[i % len(TARGETS)]
            try:
                res = self.d.call("queue.move", thread=thread[i % len(TARGETS)], **target)
                if res["outcome"] == "moved":
                    self.moved.append(time.monotonic())
                    self.took_us.append(res["took_us"])
                thread[i % len(TARGETS)] = 1 - res["thread"]
            except RpcError as e:
                self.errors.append(f"{target}: {e}")
            except Exception as e:  # noqa: BLE001  (the daemon went away: reported by the checks)
                self.errors.append(f"{target}: {e!r}")
                return
            i += 1
            time.sleep(self.pause_s)

    def moves_between(self, start: float, end: float) -> int:
        return sum(1 for t in self.moved if start <= t <= end)


def run_queue_move(ctx: Context, r: ScenarioResult):
    wd, s1, d = node_with_port(ctx, r, "vm1", "qm-vm1.sock", 0x43, 2)
    www, peer_blob = _peer_blob(wd, BLOB_MB)
    ctx.background(["ip", "netns", "exec", PEER_NS, "busybox", "httpd", "-f", "-p", "8080",
                    "-h", www], os.path.join(wd, "peer-httpd.log"))
    g = ctx.guest(wd, s1, "vm1", mac=mac(0x43), ip=f"{GUEST_IP}/24", peer=PEER_IP, reconnect=1,
                  netdev_queues=2, smp=2, queues=2,
                  run=["wait-peer,_,90", f"http-serve,{BLOB_MB}", "http-get,_,180"])
    g.start()
    mover = Mover(d)
    fetched = guest_blob = guest_got = None
    start = end = 0.0
    try:
        wait_result(g, "wait-peer", d, 180)
        guest_blob = wait_result(g, "http-serve", d, 60)
        start = time.monotonic()
        mover.start()
        # Guest -> peer here, peer -> guest in the guest (its next step).
        fetched = _peer_fetch(f"http://{GUEST_IP}:8080/blob", 180, ns=PEER_NS)
        guest_got = wait_result(g, "http-get", d, 180)
        end = time.monotonic()
    except GuestError as e:
        r.check("guest reached the peer", False, str(e))
    finally:
        mover.stop.set()
        if mover.is_alive():
            mover.join(10)
    check_transfer(r, guest_blob, fetched, "HTTP guest -> peer while queues move", "http_mbps")
    check_transfer(r, peer_blob, guest_got, "HTTP peer -> guest while queues move",
                   "http_rev_mbps")
    during = mover.moves_between(start, end)
    r.figure("moves", len(mover.moved))
    r.figure("moves_during_transfers", during)
    if mover.took_us:
        ordered = sorted(mover.took_us)
        r.figure("move_took_us_p50", ordered[len(ordered) // 2])
        r.figure("move_took_us_max", ordered[-1])
    r.check(f"at least {MIN_MOVES} moves while the transfers ran", during >= MIN_MOVES,
            f"{during} of {len(mover.moved)} moves in {end - start:.1f} s")
    r.check("every queue.move succeeded", not mover.errors,
            "; ".join(mover.errors[:3]) or f"{len(mover.moved)} moved")
    try:
        stats = d.call("stats.get")
        gone = sum(t.get("dropped_port_gone", 0) for t in stats["threads"])
        r.check("no frame dropped as port_gone", gone == 0, f"{gone}")
        drops = {k: v for k, v in stats["ports"]["vm1"].get("drops", {}).items() if v}
        if drops:
            r.note(f"port vm1 drops {drops}")
        moved = [(p["pair"], p["thread"]) for p in stats["ports"]["vm1"]["queue_pairs"]]
        r.say(f"pairs on threads at the end: {moved}")
    except Exception as e:  # noqa: BLE001
        r.check("no frame dropped as port_gone", False, f"control socket: {e}")
    rc = wait_done(r, g, 120, d)
    r.check("guest's steps all succeeded", rc == 0, f"rc {rc}")
    check_alive(r, d)
    check_clean_stop(r, d)
