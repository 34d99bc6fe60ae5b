"""A port added and removed 1000 times while frames flow between two other
ports (two test frontends in a closed loop, every frame awaited and compared)
loses none of them, and leaves no fd or memory growth in the daemon
(/proc/PID/fd and VmRSS after a warm-up)."""

import json
import os
import socket
import subprocess
import unittest

import ctltest
from ctltest import TRAFFIC_PAIR
from xvtest.control import connect, rpc
from xvtest.procfs import fd_count, rss_kib

MAC1, MAC2, MAC_CHURN = "52:54:00:00:60:01", "52:54:00:00:60:02", "52:54:00:00:60:99"
CYCLES, WARMUP = 1000, 100
# Bounds after the warm-up: a leak of one fd or 600 bytes per cycle would exceed them.
FD_SLACK, RSS_SLACK_KIB = 2, 512


def closed_by_peer(sock):
    """True once the daemon has closed its end. A connection it accepted reads
    end-of-file; one still waiting in the listen backlog when the listener is
    closed is reset (the kernel's unix_release_sock), which is a close too."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True


class PortChurn(unittest.TestCase):
    def setUp(self):
        self.dir = ctltest.workdir("churn")
        self.socks = [os.path.join(self.dir, "vm1.sock"), os.path.join(self.dir, "vm2.sock")]
        self.daemon = ctltest.checked_daemon(self.dir, {
            "threads": {"count": 2},
            "ports": [{"name": "vm1", "socket": self.socks[0], "mac": MAC1, "thread": 0},
                      {"name": "vm2", "socket": self.socks[1], "mac": MAC2, "thread": 1}],
        }).start()
        self.traffic = None

    def tearDown(self):
        if self.traffic and self.traffic.returncode is None:
            self.traffic.kill()
            self.traffic.communicate()
        code = self.daemon.stop()
        self.assertEqual(code, 0, self.daemon.tail())

    def test_add_remove_1000_times_under_traffic(self):
        self.traffic = subprocess.Popen([TRAFFIC_PAIR, *self.socks[:1], MAC1, self.socks[1], MAC2],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.assertEqual(self.traffic.stdout.readline().strip(), "ready", self.traffic.stderr)
        churn_sock = os.path.join(self.dir, "churn.sock")
        pid = self.daemon.pid
        control = connect(self.daemon.control_path)
        baseline = None
        samples = []
        for i in range(CYCLES):
            mode = "client" if i % 7 == 3 else "server"
            added = rpc(control, "port.add", {"name": "churn", "socket": churn_sock,
                                               "mac": MAC_CHURN, "mode": mode}, id=i)
            self.assertIn("result", added, added)
            frontend = None
            if mode == "server" and i % 10 == 0:
                frontend = socket.socket(socket.AF_UNIX)  # connected while it is removed
                frontend.connect(churn_sock)
            removed = rpc(control, "port.remove", {"name": "churn"}, id=i)
            self.assertEqual(removed.get("result"), {"removed": "churn"}, removed)
            if frontend:
                frontend.settimeout(10)
                self.assertTrue(closed_by_peer(frontend))
                frontend.close()
            if i + 1 == WARMUP:
                baseline = (fd_count(pid), rss_kib(pid))
            if (i + 1) % 100 == 0:
                samples.append((i + 1, fd_count(pid), rss_kib(pid)))
        final = (fd_count(pid), rss_kib(pid))
        out, err = self.traffic.communicate(timeout=60)  # closes its stdin: the end
        self.assertEqual(self.traffic.returncode, 0, err)
        totals = json.loads(out.strip().splitlines()[-1])
        stats = rpc(control, "stats.get", id=1)["result"]["ports"]
        ports = rpc(control, "port.list", id=2)["result"]
        control.close()
        print(f"\ntraffic: {totals}\n(cycle, fds, VmRSS KiB): {samples}\n"
              f"baseline {baseline}, final {final}")
        self.assertGreater(totals["rounds"], 0)
        self.assertGreater(totals["sent"], 1000)
        self.assertEqual(totals["lost"], 0)
        self.assertEqual(totals["corrupt"], 0)
        self.assertEqual(totals["unexpected"], 0)
        self.assertEqual(totals["received"], totals["sent"])
        for name in ("vm1", "vm2"):
            self.assertEqual(sum(stats[name]["drops"].values()), 0, stats[name]["drops"])
        self.assertEqual(stats["vm1"]["rx_packets"], stats["vm2"]["tx_packets"])
        self.assertEqual(stats["vm2"]["rx_packets"], stats["vm1"]["tx_packets"])
        self.assertEqual([p["name"] for p in ports], ["vm1", "vm2"])
        self.assertFalse(os.path.exists(churn_sock))
        self.assertLessEqual(final[0], baseline[0] + FD_SLACK, samples)
        self.assertLessEqual(final[1], baseline[1] + RSS_SLACK_KIB, samples)


if __name__ == "__main__":
    unittest.main(verbosity=2)
