"""Lifecycle of xdpvhostd: SIGTERM and SIGINT while guests are connected and
frames flow end it with exit code 0 within a second (a functional deadline),
with every socket it created removed; ports and uplinks added at run time
survive a restart through state_file (and nothing else does: tunables and
the log level come from --config again); the log level comes from the
config, --log-level and log.set_level; the log format (JSON lines with a
port's VM) from the config, --log-format and a reload."""

import json
import os
import signal
import shutil
import socket
import stat
import subprocess
import time
import unittest

import ctltest
from ctltest import ABSENT_IF, TRAFFIC_PAIR
from xvtest.control import connect, rpc
from xvtest.waiting import wait_until

MAC1, MAC2, MAC3 = "52:54:00:00:40:01", "52:54:00:00:40:02", "52:54:00:00:40:03"


def start_traffic(sock_a, sock_b):
    p = subprocess.Popen([TRAFFIC_PAIR, sock_a, MAC1, sock_b, MAC2], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    if line != "ready":
        p.kill()
        raise RuntimeError(f"traffic_pair: {line} {p.stderr.read()}")
    return p


class Shutdown(unittest.TestCase):
    def setUp(self):
        self.dir = ctltest.workdir("lifecycle")
        self.socks = [os.path.join(self.dir, f"vm{i}.sock") for i in (1, 2)]
        self.daemon = ctltest.checked_daemon(self.dir, {
            "ports": [{"name": "vm1", "socket": self.socks[0], "mac": MAC1},
                      {"name": "vm2", "socket": self.socks[1], "mac": MAC2}],
            "metrics": {"listen": f"127.0.0.1:{ctltest.METRICS_PORT + 10}"},
        }).start()
        self.traffic = None

    def tearDown(self):
        if self.traffic:
            if self.traffic.poll() is None:
                self.traffic.kill()
            self.traffic.communicate()
        self.daemon.kill()

    def stop_within_a_second(self, sig):
        self.traffic = start_traffic(*self.socks)
        time.sleep(0.5)  # frames flowing both ways
        stats = self.daemon.call("stats.get")["ports"]
        self.assertGreater(stats["vm1"]["rx_packets"], 0)
        self.assertGreater(stats["vm2"]["rx_packets"], 0)
        # A control client connected at the time does not hold the daemon up either.
        idle = connect(self.daemon.control_path)
        started = time.monotonic()
        self.daemon.proc.send_signal(sig)
        try:
            code = self.daemon.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.fail(f"xdpvhostd still running 1 s after signal {sig}:\n{self.daemon.tail()}")
        elapsed = time.monotonic() - started
        idle.close()
        self.assertEqual(code, 0, self.daemon.tail())
        print(f"\nexit after signal {sig}: {elapsed * 1000:.0f} ms")
        for path in self.socks + [self.daemon.control_path]:
            self.assertFalse(os.path.exists(path), f"{path} left behind")
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", ctltest.METRICS_PORT + 10), timeout=2)
        log = self.daemon.tail(400)
        self.assertIn("shutting down", log)
        self.assertIn("xdpvhostd stopped", log)

    def test_sigterm_with_traffic(self):
        self.stop_within_a_second(signal.SIGTERM)

    def test_sigint_with_traffic(self):
        self.stop_within_a_second(signal.SIGINT)


class StateFile(unittest.TestCase):
    def test_run_time_ports_and_uplinks_survive_a_restart(self):
        """The state file holds the ports and uplinks added over the control socket, and
        only those: tunables, the log level and the config file's own ports come from
        --config again at the next start."""
        d = ctltest.workdir("statefile")
        state = os.path.join(d, "state", "xdpvhostd.state.json")
        os.makedirs(os.path.dirname(state))
        sock = lambda n: os.path.join(d, f"{n}.sock")  # noqa: E731
        config = {"ports": [{"name": "vm1", "socket": sock("vm1"), "mac": MAC1}],
                  "tunables": {"busy_poll_us": 20},
                  "state_file": state}
        daemon = ctltest.checked_daemon(d, config).start()
        try:
            daemon.call("port.add", name="vm2", socket=sock("vm2"), mac=MAC2, mode="client")
            daemon.call("port.add", name="vm3", socket=sock("vm3"), mac=MAC3, mtu=9000,
                        tunables={"rx_burst": 16})
            daemon.call("uplink.add", name="up0", interface=ABSENT_IF, queues=[0, 1])
            daemon.call("port.remove", name="vm1")
            daemon.call("tunables.set", busy_poll_us=7)
            daemon.call("tunables.set", port="vm2", signal_batch=4)
            daemon.call("log.set_level", level="debug")
            effective = daemon.call("config.get")
            # Written atomically, mode 0600: only what was added at run time, no temporaries left.
            with open(state) as f:
                saved = json.load(f)
            self.assertEqual(saved, {"ports": [p for p in effective["ports"]
                                               if p["name"] in ("vm2", "vm3")],
                                     "uplinks": effective["uplinks"]})
            self.assertEqual(stat.S_IMODE(os.stat(state).st_mode), 0o600)
            self.assertEqual(os.listdir(os.path.dirname(state)), ["xdpvhostd.state.json"])
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())
        # Started again from the same config file: its own port and tunables, plus the state.
        daemon = ctltest.checked_daemon(d, config).start()
        try:
            ports = {p["name"]: p for p in daemon.call("port.list")}
            self.assertEqual(sorted(ports), ["vm1", "vm2", "vm3"])
            self.assertEqual(ports["vm3"]["mtu"], 9000)
            self.assertEqual(daemon.call("tunables.get", port="vm3")["overrides"], {"rx_burst": 16})
            self.assertEqual(daemon.call("tunables.get", port="vm2")["tunables"]["signal_batch"], 4)
            self.assertEqual(daemon.call("tunables.get")["tunables"]["busy_poll_us"], 20)
            self.assertEqual(daemon.call("config.get")["log"]["level"], "info")
            self.assertEqual([u["name"] for u in daemon.call("uplink.list")], ["up0"])
            # vm3 is served: a frontend can connect to its socket.
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock("vm3"))
            s.close()
            self.assertIn("restored state: 2 port(s), 1 uplink(s)", daemon.tail(200))
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())

    def test_state_entry_clashing_with_the_file_is_left_out(self):
        """A port of the state file whose name the config file now uses: the file wins."""
        d = ctltest.workdir("stateclash")
        state = os.path.join(d, "state.json")
        sock = lambda n: os.path.join(d, f"{n}.sock")  # noqa: E731
        with open(state, "w") as f:
            json.dump({"ports": [{"name": "vm1", "socket": sock("old"), "mac": MAC2},
                                 {"name": "vm9", "socket": sock("vm9"), "mac": MAC3},
                                 {"name": "bad", "socket": "relative.sock", "mac": MAC3}],
                       "uplinks": []}, f)
        config = {"ports": [{"name": "vm1", "socket": sock("vm1"), "mac": MAC1}],
                  "state_file": state}
        daemon = ctltest.checked_daemon(d, config).start()
        try:
            ports = {p["name"]: p for p in daemon.call("port.list")}
            self.assertEqual(sorted(ports), ["vm1", "vm9"])
            self.assertEqual(ports["vm1"]["socket"], sock("vm1"))
            log = daemon.tail(200)
            self.assertIn("port vm1 left out: the config file has a port of that name", log)
            self.assertIn("ports[2].socket", log)
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())


class LogLevel(unittest.TestCase):
    def test_level_from_config_flag_and_control(self):
        d = ctltest.workdir("loglevel")
        config = {"ports": [{"name": "vm1", "socket": os.path.join(d, "vm1.sock"), "mac": MAC1}],
                  "log": {"level": "warn"}}
        daemon = ctltest.checked_daemon(d, config).start()
        try:
            self.assertNotIn("xdpvhostd running", daemon.tail(200))  # an info line
            with connect(daemon.control_path) as s:
                self.assertEqual(rpc(s, "log.set_level", {"level": "debug"})["result"],
                                 {"level": "debug", "previous": "warn"})
                rpc(s, "port.add", {"name": "vm2", "socket": os.path.join(d, "vm2.sock"),
                                    "mac": MAC2})
            wait_until(lambda: "port vm2: server socket" in daemon.tail(200),
                       what="info line after log.set_level debug")
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())
        # --log-level overrides the config.
        d2 = ctltest.workdir("loglevel2")
        config["ports"][0]["socket"] = os.path.join(d2, "vm1.sock")
        daemon = ctltest.checked_daemon(d2, config, extra_args=("--check-replies",
                                                                "--log-level", "info")).start()
        try:
            self.assertIn("xdpvhostd running", daemon.tail(200))
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())


class LogFormat(unittest.TestCase):
    """log.format json: every line one JSON event; an event about a port
    names it and its owner's namespace, vm and claim, from its first line
    to its last; SIGHUP reloads the format; --log-format overrides it."""

    def events(self, daemon):
        text = daemon.log_text(this_run=True)
        return [json.loads(line) for line in text.splitlines() if not line.startswith("===== xvtest")]

    def test_json_lines_name_the_ports_vm(self):
        d = ctltest.workdir("logformat")
        owner = {"namespace": "tenant-a", "vm": "web-1", "claim": "web-1-vhost-x7"}
        config = {"ports": [{"name": "vm1", "socket": os.path.join(d, "vm1.sock"), "mac": MAC1,
                             "owner": owner}],
                  "log": {"level": "info", "format": "json"}}
        daemon = ctltest.checked_daemon(d, config).start()
        try:
            daemon.call("port.add", name="vm2", socket=os.path.join(d, "vm2.sock"), mac=MAC2,
                        owner={"namespace": "tenant-b", "vm": "db-0", "claim": "c2"})
            daemon.call("port.add", name="vm3", socket=os.path.join(d, "vm3.sock"), mac=MAC3)
            daemon.call("port.remove", name="vm2")
            wait_until(lambda: any(e["message"] == "port vm2: removed" for e in self.events(daemon)),
                       what="vm2's removal logged")
            events = self.events(daemon)  # every line parses
            for e in events:
                self.assertLessEqual({"time", "level", "logger", "message"}, set(e), e)
                self.assertRegex(e["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            about = {name: [e for e in events if e.get("port") == name] for name in ("vm1", "vm2", "vm3")}
            self.assertTrue(about["vm1"] and about["vm2"] and about["vm3"], events)
            for e in about["vm1"]:
                self.assertEqual((e["namespace"], e["vm"], e["claim"]), ("tenant-a", "web-1", "web-1-vhost-x7"))
            for e in about["vm2"]:  # "added" to "removed"
                self.assertEqual((e["namespace"], e["vm"]), ("tenant-b", "db-0"), e)
            self.assertTrue(all("vm" not in e for e in about["vm3"]), about["vm3"])
            self.assertTrue(any(e["message"].startswith("xdpvhostd running") and "port" not in e
                                for e in events))
            # A reload to text: lines from then on are text.
            config["log"]["format"] = "text"
            with open(daemon.config_path, "w") as f:
                json.dump(dict(daemon.config, log=config["log"]), f)
            os.kill(daemon.pid, signal.SIGHUP)
            wait_until(lambda: "reload: 1 service thread(s)" in daemon.log_text(this_run=True),
                       what="the reload")
            daemon.call("port.add", name="vm4", socket=os.path.join(d, "vm4.sock"), mac="52:54:00:00:40:04")
            wait_until(lambda: " info port vm4: " in daemon.log_text(this_run=True),
                       what="a text line after the reload")
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())
        # --log-format overrides the config.
        d2 = ctltest.workdir("logformat2")
        config = {"ports": [{"name": "vm1", "socket": os.path.join(d2, "vm1.sock"), "mac": MAC1}],
                  "log": {"level": "info", "format": "text"}}
        daemon = ctltest.checked_daemon(d2, config, extra_args=("--check-replies", "--log-format", "json")).start()
        try:
            self.assertTrue(any(e["message"].startswith("xdpvhostd running") for e in self.events(daemon)))
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())
        r = subprocess.run([ctltest.XDPVHOSTD, "--log-format", "xml", "--config", daemon.config_path],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn('--log-format: "xml" is not text or json', r.stderr)


class ConfigFollowing(unittest.TestCase):
    """--follow-config: a new version of the file, published as the kubelet
    publishes a ConfigMap's (a "..data" symlink renamed over the old one),
    is applied with no signal and no restart: a port added, tunables set;
    a version that does not load changes nothing and shows in
    status.config; sections that need a restart are named there; a
    version equal to the one in force is not applied again. "${NAME}" in
    the file comes from the environment."""

    def publish(self, d, config, version):
        stamp = f"..2026_12_07.{version}"
        os.makedirs(os.path.join(d, "cm", stamp))
        with open(os.path.join(d, "cm", stamp, "config.json"), "w") as f:
            f.write(config if isinstance(config, str) else json.dumps(config))
        os.symlink(stamp, os.path.join(d, "cm", "..data_tmp"))
        os.rename(os.path.join(d, "cm", "..data_tmp"), os.path.join(d, "cm", "..data"))
        if not os.path.islink(os.path.join(d, "cm", "config.json")):
            os.symlink("..data/config.json", os.path.join(d, "cm", "config.json"))

    def test_a_configmap_update_is_applied_without_a_restart(self):
        d = ctltest.workdir("follow")
        os.makedirs(os.path.join(d, "cm"))
        base = {"ports": [{"name": "vm1", "socket": os.path.join(d, "vm1.sock"), "mac": MAC1}],
                "control": {"socket": os.path.join(d, "control.sock")},
                "metrics": {"listen": "${XV_FOLLOW_IP}:" + str(ctltest.METRICS_PORT + 40)},
                "log": {"level": "info"}}
        self.publish(d, base, 1)
        daemon = ctltest.checked_daemon(d, base, extra_args=("--check-replies", "--follow-config"))
        # Daemon.start writes its config there: through the symlink, into
        # version 1's file, with the same contents.
        daemon.config_path = os.path.join(d, "cm", "config.json")
        os.environ["XV_FOLLOW_IP"] = "127.0.0.1"
        try:
            daemon.start()
        finally:
            del os.environ["XV_FOLLOW_IP"]
        try:
            pid = daemon.pid
            status = daemon.call("status")["config"]
            self.assertEqual(status, {"path": daemon.config_path, "following": True, "reloads": 0,
                                      "last_error": None, "problems": [], "restart_needed": []})
            self.assertEqual(daemon.call("config.get")["metrics"]["listen"],
                             f"127.0.0.1:{ctltest.METRICS_PORT + 40}")
            # A port and a tunable: applied, no restart.
            v2 = json.loads(json.dumps(base))
            v2["ports"].append({"name": "vm2", "socket": os.path.join(d, "vm2.sock"), "mac": MAC2})
            v2["tunables"] = {"busy_poll_us": 7}
            self.publish(d, v2, 2)
            wait_until(lambda: daemon.call("status")["config"]["reloads"] == 1, what="the update applied")
            self.assertEqual(sorted(p["name"] for p in daemon.call("port.list")), ["vm1", "vm2"])
            self.assertEqual(daemon.call("tunables.get")["tunables"]["busy_poll_us"], 7)
            # A version that does not load: nothing changes, status says why.
            self.publish(d, '{"ports": [', 3)
            wait_until(lambda: daemon.call("status")["config"]["last_error"] is not None,
                       what="the broken version reported")
            self.assertIn("not valid JSON", daemon.call("status")["config"]["last_error"])
            self.assertEqual(len(daemon.call("port.list")), 2)
            # The same version again: no reload; the error is gone.
            self.publish(d, v2, 4)
            wait_until(lambda: daemon.call("status")["config"]["last_error"] is None, what="v2 again")
            self.assertEqual(daemon.call("status")["config"]["reloads"], 1)
            # threads: only at the next start, and status says so.
            v5 = dict(v2, threads={"count": 2})
            self.publish(d, v5, 5)
            wait_until(lambda: daemon.call("status")["config"]["reloads"] == 2, what="v5")
            self.assertEqual(daemon.call("status")["config"]["restart_needed"], ["threads"])
            self.assertEqual(len(daemon.call("status")["threads"]), 1)
            # SIGHUP still reloads (and re-applies the same version).
            os.kill(pid, signal.SIGHUP)
            wait_until(lambda: daemon.call("status")["config"]["reloads"] == 3, what="SIGHUP's reload")
            self.assertEqual(daemon.pid, pid)
            self.assertEqual(ctltest.ctl(daemon.control_path, "status")[0], 0)
            self.assertIn("(followed), 3 reload(s); restart needed for", ctltest.ctl(daemon.control_path, "status")[1])
            # The volume's directory goes away: said; once back, followed
            # again (under the daemon's seccomp filter) and its file applied.
            shutil.rmtree(os.path.join(d, "cm"))
            wait_until(lambda: not daemon.call("status")["config"]["following"], what="the loss said")
            self.assertIn(os.path.join(d, "cm") + " was removed", daemon.call("status")["config"]["last_error"])
            os.makedirs(os.path.join(d, "cm"))
            self.publish(d, dict(v5, tunables={"busy_poll_us": 9}), 6)
            wait_until(lambda: daemon.call("status")["config"]["following"], timeout=15, what="followed again")
            wait_until(lambda: daemon.call("status")["config"]["reloads"] == 4, what="the file applied")
            self.assertIsNone(daemon.call("status")["config"]["last_error"])
            self.assertEqual(daemon.call("tunables.get")["tunables"]["busy_poll_us"], 9)
            self.assertEqual(daemon.pid, pid)
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())


if __name__ == "__main__":
    unittest.main(verbosity=2)
