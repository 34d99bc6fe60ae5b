"""xdpvhostctl against a running daemon: every command in human and --json
form, and the exit codes scripts rely on (0 ok, 1 JSON-RPC error, 2 usage,
3 daemon unreachable, 4 not healthy)."""

import json
import os
import socket
import subprocess
import time
import unittest

import ctltest
from ctltest import ABSENT_IF, XDPVHOSTCTL
from xvtest.proto import Proto

PROTO = Proto()


class Ctl(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = ctltest.workdir("ctl")
        cls.daemon = ctltest.checked_daemon(cls.dir, {
            "ports": [{"name": "vm1", "socket": os.path.join(cls.dir, "vm1.sock"),
                       "mac": "52:54:00:00:30:01"}],
        }).start()
        cls.sock = cls.daemon.control_path

    @classmethod
    def tearDownClass(cls):
        assert cls.daemon.stop() == 0, cls.daemon.tail()

    def run_ctl(self, *args, code=0):
        rc, out, err = ctltest.ctl(self.sock, *args)
        self.assertEqual(rc, code, f"xdpvhostctl {' '.join(args)}\nstdout:\n{out}\nstderr:\n{err}")
        return out, err

    def json_ctl(self, method, *args):
        out, _ = self.run_ctl("--json", *args)
        result = json.loads(out)
        self.assertEqual(PROTO.result_errors(method, result), [], out)
        return result

    def test_status_and_version(self):
        out, _ = self.run_ctl("status")
        self.assertIn("xdpvhostd 0.", out)
        self.assertIn("vm1", out)
        self.assertIn("THREAD", out)
        self.assertRegex(out, r"fds +[0-9]+ of [0-9]+: .*eventfd [0-9]+.*socket [0-9]+")
        self.assertRegex(out, r"rss +[0-9.]+ MiB")
        self.assertRegex(out, r"heap +[0-9.]+ [KMG]iB in use, [0-9.]+ ([KMG]i)?B free")
        status = self.json_ctl("status", "status")
        self.assertEqual([p["name"] for p in status["ports"]], ["vm1"])
        fds = status["resources"]["fds"]
        self.assertEqual(fds["total"], sum(v for k, v in fds.items() if k not in ("total", "limit")))
        self.assertGreater(status["resources"]["threads"], 1)
        out, _ = self.run_ctl("version")
        self.assertIn("xdpvhostctl ", out)
        self.assertIn("(protocol 1)", out)
        v = json.loads(self.run_ctl("version", "--json")[0])
        self.assertEqual(v["daemon"]["protocol"], 1)

    def test_health(self):
        """The readiness probe's command: 0 and "healthy" while the port serves
        its socket, 4 and the problem once the socket file is gone, 0 again
        when that port is removed; 3 when no daemon answers."""
        out, _ = self.run_ctl("health")
        self.assertEqual(out, "healthy\n")
        self.assertEqual(self.json_ctl("health", "health"), {"healthy": True, "problems": []})
        sock = os.path.join(self.dir, "vmh.sock")
        self.run_ctl("port", "add", "vmh", "--socket", sock, "--mac", "52:54:00:00:30:0e")
        try:
            os.unlink(sock)  # no frontend can connect any more
            out, _ = self.run_ctl("health", code=4)
            self.assertIn("port vmh", out)
            self.assertIn(sock, out)
            result = json.loads(self.run_ctl("--json", "health", code=4)[0])
            self.assertEqual(PROTO.result_errors("health", result), [])
            self.assertFalse(result["healthy"])
            self.assertEqual(len(result["problems"]), 1, result)
        finally:
            self.run_ctl("port", "rm", "vmh")
        self.run_ctl("health")
        self.assertEqual(ctltest.ctl(os.path.join(self.dir, "missing.sock"), "health")[0], 3)

    def test_port_lifecycle(self):
        sock = os.path.join(self.dir, "vm2.sock")
        out, _ = self.run_ctl("port", "add", "vm2", "--socket", sock, "--mac", "52:54:00:00:30:02",
                              "--queues", "2", "--mtu", "9000")
        self.assertIn("added port vm2", out)
        self.assertTrue(os.path.exists(sock))
        out, _ = self.run_ctl("port", "list")
        self.assertIn("vm2", out)
        ports = self.json_ctl("port.list", "port", "list")
        self.assertEqual(sorted(p["name"] for p in ports), ["vm1", "vm2"])
        detail = self.json_ctl("port.get", "port", "get", "vm2")
        self.assertEqual((detail["queue_pairs"], detail["mtu"]), (2, 9000))
        out, _ = self.run_ctl("port", "get", "vm2")
        self.assertIn("tunables.signal_batch", out)
        # Name taken: exit 1 with the code on stderr; --json puts the error object on stdout.
        _, err = self.run_ctl("port", "add", "vm2", "--socket", sock + "x", "--mac",
                              "52:54:00:00:30:09", code=1)
        self.assertIn("-32001", err)
        self.assertIn("name_in_use", err)
        out, _ = self.run_ctl("--json", "port", "add", "vm2", "--socket", sock + "x", "--mac",
                              "52:54:00:00:30:09", code=1)
        self.assertEqual(json.loads(out)["error"]["code"], -32001)
        # Schema violations: every one listed.
        _, err = self.run_ctl("port", "add", "vm3", "--socket", sock + "y", "--mac", "zz",
                              "--mtu", "1", code=1)
        self.assertIn("-32602", err)
        self.assertIn("params.mac", err)
        self.assertIn("params.mtu", err)
        out, _ = self.run_ctl("port", "rm", "vm2")
        self.assertIn("removed port vm2", out)
        self.assertFalse(os.path.exists(sock))
        self.run_ctl("port", "remove", "vm2", code=1)
        self.run_ctl("port", "get", "vm2", code=1)

    def test_client_mode_port(self):
        sock = os.path.join(self.dir, "client.sock")
        self.run_ctl("port", "add", "vmc", "--socket", sock, "--mac", "52:54:00:00:30:0c",
                     "--mode", "client")
        self.assertEqual(self.json_ctl("port.get", "port", "get", "vmc")["mode"], "client")
        self.run_ctl("port", "rm", "vmc")
        self.run_ctl("port", "add", "vmd", "--socket", sock, "--mac", "52:54:00:00:30:0d",
                     "--mode", "sideways", code=2)

    def test_uplinks(self):
        out, _ = self.run_ctl("uplink", "list")
        self.assertIn("no uplinks", out)
        out, _ = self.run_ctl("uplink", "add", "up1", "--interface", ABSENT_IF, "--queue", "0",
                              "--queue", "1", "--bind", "copy")
        self.assertIn("up1", out)
        uplinks = self.json_ctl("uplink.list", "uplink", "list")
        self.assertEqual([q["queue"] for q in uplinks[0]["queues"]], [0, 1])
        self.assertEqual(uplinks[0]["bind"], "copy")
        self.run_ctl("port", "add", "vmu", "--socket", os.path.join(self.dir, "vmu.sock"),
                     "--mac", "52:54:00:00:30:0e", "--uplink", "up1")
        _, err = self.run_ctl("uplink", "rm", "up1", code=1)
        self.assertIn("in_use", err)
        self.run_ctl("port", "rm", "vmu")
        self.run_ctl("uplink", "rm", "up1")
        self.run_ctl("uplink", "add", "up2", "--interface", ABSENT_IF, "--bind", "fast", code=2)

    def test_tunables(self):
        out, _ = self.run_ctl("tunable", "get")
        self.assertIn("busy_poll_us", out)
        out, _ = self.run_ctl("tunable", "set", "signal_batch", "8", "--port", "vm1")
        self.assertIn("override", out)
        t = self.json_ctl("tunables.get", "tunables", "get", "--port", "vm1")
        self.assertEqual(t["overrides"], {"signal_batch": 8})
        self.json_ctl("tunables.set", "tunable", "set", "busy_poll_us", "0")
        self.assertEqual(self.json_ctl("tunables.get", "tunable", "get")["tunables"]["busy_poll_us"], 0)
        self.run_ctl("tunable", "set", "napi_busy_poll", "true")
        self.run_ctl("tunable", "set", "napi_busy_poll", "false")
        self.run_ctl("tunable", "set", "busy_poll_us", "50")
        _, err = self.run_ctl("tunable", "set", "signal_batch", "lots", code=1)
        self.assertIn("-32602", err)
        self.run_ctl("tunable", "set", "no_such_knob", "1", code=1)
        self.run_ctl("tunable", "get", "--port", "vm1", "--uplink", "x", code=2)
        self.run_ctl("tunable", "set", "signal_batch", code=2)
        self.run_ctl("tunable", "set", "signal_batch", "32", "--port", "vm1")

    def test_stats(self):
        out, _ = self.run_ctl("stats")
        self.assertIn("RX PKTS", out)
        self.assertIn("vm1", out)
        s = self.json_ctl("stats.get", "stats", "--json")
        self.assertIn("vm1", s["ports"])
        s = self.json_ctl("stats.get", "stats", "--port", "vm1")
        self.assertEqual(s["threads"], [])
        out, _ = self.run_ctl("stats", "--watch", "0.2", "--count", "3", "--json")
        lines = out.splitlines()
        self.assertEqual(len(lines), 3)
        for line in lines:
            self.assertEqual(PROTO.result_errors("stats.get", json.loads(line)), [])
        started = time.monotonic()
        out, _ = self.run_ctl("stats", "--watch", "--count", "2")
        # Without SECONDS the interval is the documented 1 s (a lower bound only).
        self.assertGreaterEqual(time.monotonic() - started, 0.9)
        self.assertIn("RX PPS", out)  # the second sample has rates
        out, _ = self.run_ctl("stats", "reset")
        self.assertIn("reset ports: vm1", out)
        r = self.json_ctl("stats.reset", "stats", "reset", "--port", "vm1")
        self.assertEqual(r, {"ports": ["vm1"], "uplinks": [], "threads": False})
        self.run_ctl("stats", "--port", "nope", code=1)
        for bad in ("-1", "0", "abc"):
            self.run_ctl("stats", "--watch", bad, code=2)

    def test_queue_move(self):
        # One service thread: the port is there already; there is no thread 1.
        out, _ = self.run_ctl("queue", "move", "--port", "vm1", "--thread", "0")
        self.assertIn("port vm1 pairs 0 already runs on service thread 0", out)
        r = self.json_ctl("queue.move", "queue", "move", "--port", "vm1", "--pair", "0",
                          "--thread", "0")
        self.assertEqual((r["outcome"], r["from"], r["thread"], r["pairs"]),
                         ("already_there", 0, 0, [0]))
        _, err = self.run_ctl("queue", "move", "--port", "vm1", "--thread", "1", code=1)
        self.assertIn("service thread 1 does not exist", err)
        self.run_ctl("queue", "move", "--port", "vm1", "--pair", "3", "--thread", "0", code=1)
        self.run_ctl("queue", "move", "--uplink", "nope", "--thread", "0", code=1)
        self.run_ctl("queue", "move", "--thread", "0", code=2)  # neither --port nor --uplink
        self.run_ctl("queue", "move", "--port", "vm1", "--uplink", "up0", "--thread", "0", code=2)

    def test_log_level_and_call(self):
        out, _ = self.run_ctl("log", "level", "debug")
        self.assertIn("log level debug", out)
        self.run_ctl("log", "level", "info")
        self.run_ctl("log", "level", "chatty", code=2)
        cfg = json.loads(self.run_ctl("call", "config.get")[0])
        self.assertEqual(PROTO.result_errors("config.get", cfg), [])
        got = json.loads(self.run_ctl("call", "port.get", '{"name":"vm1"}')[0])
        self.assertEqual(got["name"], "vm1")
        # A port added as the DRA plugin adds it: its owner shows in port list.
        owned = json.dumps({"name": "vm7", "socket": os.path.join(self.dir, "vm7.sock"),
                            "mac": "52:54:00:00:30:07",
                            "owner": {"namespace": "tenant-a", "vm": "web-1", "claim": "c1"}})
        self.run_ctl("call", "port.add", owned)
        listing = self.run_ctl("port", "list")[0].splitlines()
        self.assertIn("OWNER", listing[0])
        self.assertIn("tenant-a/web-1", next(line for line in listing if line.startswith("vm7")))
        self.run_ctl("port", "rm", "vm7")
        self.run_ctl("call", "port.get", "{not json", code=2)
        _, err = self.run_ctl("call", "no.such", code=1)
        self.assertIn("-32601", err)

    def test_usage_errors(self):
        for args in [(), ("bogus",), ("port",), ("port", "add", "x"), ("port", "get"),
                     ("--timeout", "0", "status"), ("status", "extra")]:
            self.run_ctl(*args, code=2)
        out, _ = self.run_ctl("--help")
        self.assertIn("Exit codes:", out)
        self.assertIn("3  cannot reach the daemon", out)

    def test_unreachable_daemon(self):
        missing = os.path.join(self.dir, "missing.sock")
        rc, _, err = ctltest.ctl(missing, "status")
        self.assertEqual(rc, 3)
        self.assertIn("cannot connect", err)
        # A socket file nobody listens on.
        stale = os.path.join(self.dir, "stale.sock")
        s = socket.socket(socket.AF_UNIX)
        s.bind(stale)
        s.close()
        self.assertEqual(ctltest.ctl(stale, "status")[0], 3)
        # A listener that never answers: --timeout bounds the wait.
        mute = os.path.join(self.dir, "mute.sock")
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(mute)
        listener.listen(4)
        rc, _, err = ctltest.ctl(mute, "--timeout", "0.3", "status")
        listener.close()
        self.assertEqual(rc, 3)
        self.assertIn("no reply", err)

    def test_socket_from_environment(self):
        env = dict(os.environ, XDPVHOST_SOCKET=self.sock)
        p = subprocess.run([XDPVHOSTCTL, "port", "list"], capture_output=True, text=True, env=env,
                           timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("vm1", p.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
