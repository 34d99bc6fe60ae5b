#!/usr/bin/env python3
"""Isolation and operations of the real daemon: socket paths
(socket_dirs, symlinks, live sockets), control socket access (modes, peer
credentials, idle clients, root's slot), accept loops out of fds, the
confinement (capabilities, no_new_privs, seccomp), SIGHUP reloads, the
service manager's notifications and the process metrics.

Runs as root: clients of other uids via setpriv. Everything lives in
temporary directories /tmp/xvhard-*, removed at the end, also on failure;
metrics listeners on 127.0.0.1:19577 and up."""

import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import ctltest
from ctltest import XDPVHOSTCTL, XDPVHOSTD
from xvtest import prom
from xvtest.control import connect, read_line, rpc
from xvtest.waiting import wait_until

MAC1, MAC2, MAC3, MAC9 = (f"52:54:00:00:70:0{i}" for i in (1, 2, 3, 9))
METRICS_PORT = 19577
NOGROUP = 65534            # nobody:nogroup, the configured control.group below
STRANGER = 65533           # neither root, nor the daemon's uid, nor in that group
# Root's capabilities after set-up: DAC_OVERRIDE (1), NET_ADMIN (12), NET_RAW (13),
# IPC_LOCK (14), SYS_ADMIN (21).
ROOT_KEPT = (1 << 1) | (1 << 12) | (1 << 13) | (1 << 14) | (1 << 21)
SYSTEM_PYTHON = "/usr/bin/python3"


def workdir(test):
    d = tempfile.mkdtemp(prefix="xvhard-")
    os.chmod(d, 0o755)
    test.addCleanup(shutil.rmtree, d, True)
    return d


def daemon(test, d, config, **kw):
    dm = ctltest.checked_daemon(d, config, **kw)
    test.addCleanup(dm.kill)
    return dm


def status_fields(pid, task=None):
    path = f"/proc/{pid}/status" if task is None else f"/proc/{pid}/task/{task}/status"
    with open(path) as f:
        return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def closed(sock, timeout=10):
    """True if the peer hangs up within timeout, False if it has not by then."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def as_user(uid, gid, groups, code, *args, **kw):
    """Runs python `code` as uid/gid with supplementary `groups`."""
    cmd = ["setpriv", f"--reuid={uid}", f"--regid={gid}"]
    cmd += [f"--groups={','.join(map(str, groups))}"] if groups else ["--clear-groups"]
    return subprocess.run(cmd + [sys.executable, "-c", code, *args], capture_output=True,
                          text=True, timeout=30, **kw)


# A client: connects, asks for the version, prints "answered" or "closed".
VERSION_CLIENT = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"version"}\n')
    data = s.recv(65536)
except OSError:
    data = b""
print("answered" if b'"result"' in data else "closed")
"""

# Holds N idle connections, each answered once, until its stdin closes.
IDLE_CLIENTS = r"""
import socket, sys
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    try:
        s.connect(sys.argv[1])
        s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"version"}\n')
        if b'"result"' in s.recv(65536):
            held.append(s)
            continue
    except OSError:
        pass
    s.close()
print(len(held), flush=True)
sys.stdin.read()
"""


class SocketPaths(unittest.TestCase):
    def setUp(self):
        self.d = workdir(self)
        self.dirs = os.path.join(self.d, "claims")
        os.makedirs(os.path.join(self.dirs, "real"))
        os.symlink(os.path.join(self.dirs, "real"), os.path.join(self.dirs, "link"))
        self.daemon = daemon(self, self.d, {"socket_dirs": [self.dirs]}).start()

    def add(self, **params):
        with connect(self.daemon.control_path) as s:
            return rpc(s, "port.add", params)

    def test_a_live_foreign_socket_is_refused_and_keeps_working(self):
        path = os.path.join(self.dirs, "real", "other.sock")
        other = socket.socket(socket.AF_UNIX)
        other.bind(path)
        other.listen(4)
        self.addCleanup(other.close)
        reply = self.add(name="vm1", socket=path, mac=MAC1)
        self.assertIn("error", reply)
        self.assertIn("another process listens on it", reply["error"]["message"])
        c = socket.socket(socket.AF_UNIX)
        c.connect(path)  # still the other service's
        conn, _ = other.accept()
        conn.close()
        c.close()
        self.assertTrue(os.path.exists(path))

    def test_a_symlinked_directory_component_is_refused(self):
        reply = self.add(name="vm1", socket=os.path.join(self.dirs, "link", "vm1.sock"), mac=MAC1)
        self.assertIn("error", reply)
        self.assertIn("is a symlink", reply["error"]["message"])
        self.assertFalse(os.path.exists(os.path.join(self.dirs, "real", "vm1.sock")))
        # The same through the real directory works.
        reply = self.add(name="vm1", socket=os.path.join(self.dirs, "real", "vm1.sock"), mac=MAC1)
        self.assertIn("result", reply, reply)

    def test_outside_socket_dirs_is_refused(self):
        reply = self.add(name="vm1", socket=os.path.join(self.d, "vm1.sock"), mac=MAC1)
        self.assertEqual(reply["error"]["code"], ctltest_code("invalid_socket_path"), reply)
        self.assertIn("is not below any of socket_dirs", reply["error"]["message"])

    def test_a_client_mode_port_does_not_follow_a_symlink(self):
        target = os.path.join(self.d, "victim.sock")   # another service's socket
        victim = socket.socket(socket.AF_UNIX)
        victim.bind(target)
        victim.listen(4)
        victim.settimeout(1.5)
        self.addCleanup(victim.close)
        link = os.path.join(self.dirs, "real", "vm2.sock")
        os.symlink(target, link)
        reply = self.add(name="vm2", socket=link, mac=MAC2, mode="client")
        self.assertIn("result", reply, reply)  # it waits for a frontend there
        with self.assertRaises(socket.timeout):
            victim.accept()
        self.assertEqual(self.daemon.port_state("vm2"), "waiting")
        wait_until(lambda: "is a symlink: not followed" in self.daemon.log_text(),
                   what="the refusal in the log")
        # Once the symlink is replaced by the frontend's socket, it connects and logs the peer.
        os.unlink(link)
        frontend = socket.socket(socket.AF_UNIX)
        frontend.bind(link)
        frontend.listen(1)
        frontend.settimeout(10)
        self.addCleanup(frontend.close)
        conn, _ = frontend.accept()
        conn.close()
        wait_until(lambda: f"connected to {link}: peer pid" in self.daemon.log_text(),
                   what="the peer's credentials in the log")


def ctltest_code(name):
    return ctltest_codes()[name]


def ctltest_codes():
    with open(os.path.join(os.environ.get("XDPVHOST_PROTO", os.path.join(
            ctltest.HERE, "..", "..", "proto")), "errors.json")) as f:
        errors = json.load(f)
    table = errors.get("errors", errors)
    if isinstance(table, dict):
        return {k: (v["code"] if isinstance(v, dict) else v) for k, v in table.items()}
    return {e["name"]: e["code"] for e in table}


class ControlAccess(unittest.TestCase):
    def test_world_writable_mode_is_refused(self):
        d = workdir(self)
        path = os.path.join(d, "c.json")
        with open(path, "w") as f:
            json.dump({"control": {"socket": os.path.join(d, "c.sock"), "mode": "0666"}}, f)
        p = subprocess.run([XDPVHOSTD, "--check", "--config", path], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("control.mode: 0666 lets every local user drive the daemon", p.stderr)

    def test_peers_root_and_group_members_only_and_roots_slot(self):
        d = workdir(self)
        dm = daemon(self, d, {"control": {"group": "nogroup", "mode": "0660"}}).start()
        sock = dm.control_path
        self.assertEqual(os.stat(sock).st_gid, NOGROUP)
        # A member of the group, by primary or supplementary group, is served.
        self.assertEqual(as_user(NOGROUP, NOGROUP, [], VERSION_CLIENT, sock).stdout.strip(),
                         "answered")
        self.assertEqual(as_user(STRANGER, STRANGER, [NOGROUP], VERSION_CLIENT,
                                 sock).stdout.strip(), "answered")
        # A stranger the file lets in (an ACL entry for its uid) is refused by its credentials.
        acl = subprocess.run([SYSTEM_PYTHON, "-c",
                              "import posix1e, sys; posix1e.ACL(text='u::rw,u:%d:rw,g::rw,m::rw,"
                              "o::-').applyto(sys.argv[1])" % STRANGER, sock],
                             capture_output=True, text=True)
        if acl.returncode != 0:
            self.skipTest(f"cannot set an ACL ({SYSTEM_PYTHON} with python3-pylibacl): "
                          f"{acl.stderr}")
        r = as_user(STRANGER, STRANGER, [], VERSION_CLIENT, sock)
        self.assertEqual(r.stdout.strip(), "closed", r.stderr)
        wait_until(lambda: f"refused pid" in dm.log_text() and f"uid {STRANGER}" in
                   dm.log_text(), what="the refusal in the log")

        # 70 idle group members: 63 get in (the last slot is root's) ...
        holder = subprocess.Popen(
            ["setpriv", f"--reuid={NOGROUP}", f"--regid={NOGROUP}", "--clear-groups",
             sys.executable, "-c", IDLE_CLIENTS, sock, "70"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.addCleanup(holder.kill)
        held = int(holder.stdout.readline())
        self.assertIn(held, range(60, 64))
        # ... and root's `xdpvhostctl status` still answers, as the liveness probe needs.
        p = subprocess.run([XDPVHOSTCTL, "--socket", sock, "--timeout", "3", "status"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("xdpvhostd", p.stdout)
        holder.stdin.close()
        holder.wait(10)

    def test_idle_clients_are_closed_and_watch_reconnects(self):
        d = workdir(self)
        dm = daemon(self, d, {"control": {"idle_timeout_s": 1}}).start()
        s = connect(dm.control_path)
        self.assertIn("result", rpc(s, "version"))
        start = time.monotonic()
        self.assertTrue(closed(s, timeout=10))
        self.assertGreaterEqual(time.monotonic() - start, 0.5)
        s.close()
        # A client that keeps sending is kept past the timeout: every request
        # moves the deadline (the timer, set for an older one, is set again).
        s = connect(dm.control_path)
        for _ in range(10):
            self.assertIn("result", rpc(s, "version"))
            time.sleep(0.3)
        self.assertFalse(closed(s, timeout=0.2))
        self.assertTrue(closed(s, timeout=10))
        s.close()
        # stats --watch keeps one connection; past the idle timeout it connects again.
        p = subprocess.run([XDPVHOSTCTL, "--socket", dm.control_path, "--json", "stats",
                            "--watch", "1.5", "--count", "3"], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 3)


class OutOfFds(unittest.TestCase):
    def test_accept_loops_back_off_and_recover(self):
        d = workdir(self)
        dirs = os.path.join(d, "s")
        port = METRICS_PORT + 1
        dm = daemon(self, d, {"socket_dirs": [dirs],
                              "ports": [{"name": "vm1", "socket": os.path.join(dirs, "vm1.sock"),
                                         "mac": MAC1}],
                              "metrics": {"listen": f"127.0.0.1:{port}"}}).start()
        pid = dm.proc.pid
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        with open(f"/proc/{pid}/limits") as f:
            hard = [l.split()[4] for l in f if l.startswith("Max open files")][0]
        # The soft limit only: raising it back needs no privilege.
        subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={fds + 2}:{hard}"], check=True)
        clients = []
        self.addCleanup(lambda: [c.close() for c in clients])
        for path in (dm.control_path, os.path.join(dirs, "vm1.sock")):
            for _ in range(40):
                c = socket.socket(socket.AF_UNIX)
                c.setblocking(False)
                try:
                    c.connect(path)
                except BlockingIOError:
                    pass
                clients.append(c)
        for _ in range(20):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            clients.append(c)
        wait_until(lambda: len(dm.log_lines("cannot accept")) >= 3, what="accept failures logged")
        # Every accept loop has fds waiting for it and none to take them with: it must rest,
        # not spin (a spinning loop burns about a second of CPU per second).
        before = cpu_seconds(pid)
        time.sleep(1.0)
        used = cpu_seconds(pid) - before
        self.assertLess(used, 0.3, f"{used:.2f} s of CPU in 1 s")
        log = dm.log_text()
        for who in ("control socket: cannot accept", "port vm1: cannot accept",
                    "metrics listener: cannot accept"):
            self.assertIn(who, log)
        self.assertIn("Too many open files", log)
        # Rate-limited: not a line per attempt.
        self.assertLess(len(dm.log_lines("cannot accept")), 40)
        for c in clients:
            c.close()
        clients.clear()
        subprocess.run(["prlimit", f"--pid={pid}", f"--nofile={hard}:{hard}"], check=True)
        wait_until(lambda: dm.answers("status"), timeout=10, what="the daemon answering again")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            self.assertEqual(r.status, 200)
        self.assertEqual(dm.stop(), 0, dm.tail())


class Confinement(unittest.TestCase):
    def check_threads(self, pid, seccomp):
        tasks = os.listdir(f"/proc/{pid}/task")
        self.assertGreaterEqual(len(tasks), 2)  # the control thread and a service thread
        names = set()
        for task in tasks:
            with open(f"/proc/{pid}/task/{task}/comm") as f:
                names.add(f.read().strip())
        # The thread that interrupts a service thread's sleeping syscall on a
        # peer's fd runs, and is confined like the others (checked below).
        self.assertIn("xdpvhost-watch", names)
        for task in tasks:
            st = status_fields(pid, task)
            self.assertEqual(st["Seccomp"], "2" if seccomp else "0", task)
            self.assertEqual(st["NoNewPrivs"], "1" if seccomp else "0", task)
            for kind in ("CapEff", "CapPrm", "CapBnd"):
                self.assertEqual(int(st[kind], 16), ROOT_KEPT, f"{task} {kind} {st[kind]}")
            self.assertEqual(int(st["CapInh"], 16), 0)
            self.assertEqual(int(st["CapAmb"], 16), 0)

    def test_every_thread_confined_after_set_up(self):
        d = workdir(self)
        # Started with a low soft limit of open files: raised to the hard one.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        low = min(256, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
        try:
            dm = daemon(self, d, {"threads": {"count": 2}}).start()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        self.check_threads(dm.proc.pid, True)
        with open(f"/proc/{dm.proc.pid}/limits") as f:
            limit = [l.split() for l in f if l.startswith("Max open files")][0]
        expected = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
        self.assertEqual(limit[3:5], [expected, expected])
        self.assertIn(f"open files limit {hard} (raised from {low})", dm.log_text())
        self.assertIn("capabilities kept: cap_dac_override,cap_net_admin,cap_net_raw,"
                      "cap_ipc_lock,cap_sys_admin", dm.log_text())
        self.assertIn("seccomp filter on", dm.log_text())
        with open(f"/proc/{dm.proc.pid}/status") as f:
            umask = [l for l in f if l.startswith("Umask:")][0].split()[1]
        self.assertEqual(umask, "0027")
        self.assertEqual(dm.stop(), 0, dm.tail())

    def test_seccomp_off_for_debugging(self):
        d = workdir(self)
        dm = daemon(self, d, {}, extra_args=("--check-replies", "--no-seccomp")).start()
        self.check_threads(dm.proc.pid, False)
        self.assertIn("seccomp filter off", dm.log_text())
        self.assertEqual(dm.stop(), 0, dm.tail())
        dm = daemon(self, d, {"security": {"seccomp": False}}).start()
        self.check_threads(dm.proc.pid, False)
        self.assertEqual(dm.stop(), 0, dm.tail())


class Signals(unittest.TestCase):
    def start_and_signal_during_start_up(self, sig):
        d = workdir(self)
        dirs = os.path.join(d, "s")
        # Enough ports that start-up takes a while after the signals are handled.
        ports = [{"name": f"p{i}", "socket": os.path.join(dirs, f"p{i}.sock"),
                  "mac": "52:54:00:01:%02x:%02x" % (i // 256, i % 256)} for i in range(400)]
        dm = daemon(self, d, {"socket_dirs": [dirs], "ports": ports})
        with open(dm.config_path, "w") as f:
            json.dump(dm.config, f)
        log = open(dm.log_path, "ab")
        proc = subprocess.Popen([XDPVHOSTD, "--config", dm.config_path], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        # "umask 027, ..." is logged right after the handlers are installed.
        wait_until(lambda: "umask 027" in dm.log_text(), timeout=10, interval=0.001,
                   what="start-up")
        proc.send_signal(sig)
        during = "seccomp filter" not in dm.log_text()
        return dm, proc, during

    def test_sighup_during_start_up_is_a_reload(self):
        dm, proc, during = self.start_and_signal_during_start_up(signal.SIGHUP)
        wait_until(lambda: "reload: 400 port(s)" in dm.log_text() or
                   "reload: 1 service thread(s), 0 uplink(s), 400 port(s)" in dm.log_text(),
                   timeout=20, what="the reload")
        self.assertIsNone(proc.poll())
        self.assertTrue(during, "the signal arrived only after start-up")
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(20), 0)

    def test_sigterm_during_start_up_stops_cleanly(self):
        dm, proc, during = self.start_and_signal_during_start_up(signal.SIGTERM)
        self.assertEqual(proc.wait(20), 0, dm.tail())
        self.assertIn("shutting down", dm.log_text())
        self.assertTrue(during, "the signal arrived only after start-up")


class Reload(unittest.TestCase):
    def test_sighup_applies_the_changed_config(self):
        d = workdir(self)
        dirs = os.path.join(d, "s")
        sock = lambda n: os.path.join(dirs, f"{n}.sock")  # noqa: E731
        state = os.path.join(d, "state.json")
        p1, p2 = METRICS_PORT + 2, METRICS_PORT + 3
        config = {"socket_dirs": [dirs], "state_file": state,
                  "ports": [{"name": "vm1", "socket": sock("vm1"), "mac": MAC1},
                            {"name": "vm2", "socket": sock("vm2"), "mac": MAC2,
                             "tunables": {"rx_burst": 8}}],
                  "tunables": {"busy_poll_us": 50},
                  "metrics": {"listen": f"127.0.0.1:{p1}"}}
        dm = daemon(self, d, config).start()
        dm.call("port.add", name="vm9", socket=sock("vm9"), mac=MAC9)
        dm.call("tunables.set", port="vm9", signal_batch=4)

        changed = json.loads(json.dumps(dm.config))
        changed["ports"] = [{"name": "vm1", "socket": sock("vm1"), "mac": MAC1, "mtu": 9000},
                            {"name": "vm2", "socket": sock("vm2"), "mac": MAC2,
                             "tunables": {"rx_burst": 16}},
                            {"name": "vm3", "socket": sock("vm3"), "mac": MAC3}]
        changed["tunables"] = {"busy_poll_us": 7}
        changed["metrics"] = {"listen": f"127.0.0.1:{p2}"}
        changed["log"] = {"level": "debug"}
        with open(dm.config_path, "w") as f:
            json.dump(changed, f)
        dm.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: {p["name"] for p in dm.call("port.list")} == {"vm1", "vm2", "vm3",
                                                                           "vm9"},
                   what="the ports of the new config")
        ports = {p["name"]: p for p in dm.call("port.list")}
        self.assertEqual(ports["vm1"]["mtu"], 9000)  # re-created
        self.assertEqual(dm.call("tunables.get", port="vm2")["overrides"], {"rx_burst": 16})
        self.assertEqual(dm.call("tunables.get")["tunables"]["busy_poll_us"], 7)
        self.assertEqual(dm.call("tunables.get", port="vm9")["overrides"], {"signal_batch": 4})
        self.assertEqual(dm.call("config.get")["log"]["level"], "debug")
        wait_until(lambda: self.scrapes(p2), what="metrics on the new address")
        self.assertEqual(dm.call("config.get")["metrics"]["listen"], f"127.0.0.1:{p2}")
        self.assertFalse(self.scrapes(p1))
        # The state file still holds the run-time port only.
        with open(state) as f:
            self.assertEqual([p["name"] for p in json.load(f)["ports"]], ["vm9"])

        # vm2 removed from the file; a broken file changes nothing.
        changed["ports"] = changed["ports"][:1] + changed["ports"][2:]
        with open(dm.config_path, "w") as f:
            json.dump(changed, f)
        dm.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: {p["name"] for p in dm.call("port.list")} == {"vm1", "vm3", "vm9"},
                   what="vm2 removed")
        self.assertFalse(os.path.exists(sock("vm2")))
        with open(dm.config_path, "w") as f:
            f.write("{not json")
        dm.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "nothing changed" in dm.log_text(), what="the refused reload")
        self.assertEqual({p["name"] for p in dm.call("port.list")}, {"vm1", "vm3", "vm9"})
        # And after a restart the state file's port is back on top of the file.
        with open(dm.config_path, "w") as f:
            json.dump(changed, f)
        self.assertEqual(dm.stop(), 0, dm.tail())
        dm.config = changed
        dm.start()
        self.assertEqual({p["name"] for p in dm.call("port.list")}, {"vm1", "vm3", "vm9"})
        self.assertEqual(dm.stop(), 0, dm.tail())

    @staticmethod
    def scrapes(port):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False


class ServiceManager(unittest.TestCase):
    def test_ready_after_the_control_socket_is_bound_and_stopping(self):
        d = workdir(self)
        notify_path = os.path.join(d, "notify.sock")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.settimeout(20)
        self.addCleanup(notify.close)
        dm = daemon(self, d, {})
        with open(dm.config_path, "w") as f:
            json.dump(dm.config, f)
        env = dict(os.environ, NOTIFY_SOCKET=notify_path)
        log = open(dm.log_path, "ab")
        proc = subprocess.Popen([XDPVHOSTD, "--config", dm.config_path], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        self.addCleanup(lambda: proc.poll() is None and proc.kill())
        message = notify.recv(4096).decode()
        self.assertIn("READY=1", message.split("\n"))
        # At READY=1 the control socket is bound and answers.
        with connect(dm.control_path) as s:
            self.assertIn("result", rpc(s, "version"))
        proc.send_signal(signal.SIGHUP)
        self.assertEqual(notify.recv(4096).decode(), "RELOADING=1")
        self.assertIn("READY=1", notify.recv(4096).decode().split("\n"))
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(notify.recv(4096).decode(), "STOPPING=1")
        self.assertEqual(proc.wait(10), 0)


class ProcessMetrics(unittest.TestCase):
    def test_present_and_plausible(self):
        d = workdir(self)
        port = METRICS_PORT + 4
        dm = daemon(self, d, {"metrics": {"listen": f"127.0.0.1:{port}"}}).start()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            families = prom.parse(r.read().decode())
        pid = dm.proc.pid
        value = lambda name: prom.value(families, name)  # noqa: E731
        self.assertEqual(families["process_cpu_seconds_total"]["type"], "counter")
        self.assertGreaterEqual(value("process_cpu_seconds_total"), 0)
        self.assertLessEqual(value("process_cpu_seconds_total"), cpu_seconds(pid) + 0.05)
        rss = int(status_fields(pid)["VmRSS"].split()[0]) * 1024
        self.assertLess(abs(value("process_resident_memory_bytes") - rss), rss / 2)
        self.assertLess(abs(value("process_open_fds") - len(os.listdir(f"/proc/{pid}/fd"))), 8)
        with open(f"/proc/{pid}/limits") as f:
            soft = [l.split()[3] for l in f if l.startswith("Max open files")][0]
        self.assertEqual(value("process_max_fds"), int(soft))
        self.assertLess(abs(value("process_start_time_seconds") - time.time()), 60)
        self.assertGreater(value("process_virtual_memory_bytes"), rss)
        self.assertEqual(dm.stop(), 0, dm.tail())


if __name__ == "__main__":
    unittest.main()
