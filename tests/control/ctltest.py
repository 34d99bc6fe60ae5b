"""Shared pieces of the tests/control suites: where the binaries are, a
daemon started with reply checking, raw control-socket connections, and
/proc readings of the daemon (fds, RSS)."""

import atexit
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
from xvtest.daemon import Daemon, wait_until  # noqa: E402,F401
from xvtest.control import Control, RpcError  # noqa: E402,F401

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
BASE = "/tmp/xdpvhost-ctl-test"
# Metrics listeners of these suites use 127.0.0.1 ports from here up.
METRICS_PORT = 19477
# An interface name no machine has: uplinks on it wait for it to appear and
# never touch a real NIC.
ABSENT_IF = "xvctl-noif0"


def binary(env, *default):
    return os.environ.get(env) or os.path.join(ROOT, "build-ctl", *default)


XDPVHOSTD = binary("XDPVHOSTD", "daemon", "xdpvhostd")
XDPVHOSTCTL = binary("XDPVHOSTCTL", "daemon", "ctl", "xdpvhostctl")
TRAFFIC_PAIR = binary("XDPVHOST_TRAFFIC_PAIR", "tests", "control", "traffic_pair")
PROTO = os.environ.get("XDPVHOST_PROTO") or os.path.join(ROOT, "proto")


def workdir(name):
    path = os.path.join(BASE, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def checked_daemon(path, config, extra_args=("--check-replies",)):
    """A Daemon whose binary is a wrapper adding `extra_args` (exec keeps the pid)."""
    wrapper = os.path.join(path, "xdpvhostd-wrapper")
    with open(wrapper, "w") as f:
        args = " ".join(extra_args)
        f.write(f'#!/bin/sh\nexec {XDPVHOSTD} {args} "$@"\n')
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
    daemon = Daemon(path, config, binary=wrapper)
    # Whatever happens to the test, no daemon outlives it.
    atexit.register(daemon.kill)
    return daemon


def connect(path, timeout=10.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def read_line(sock):
    """One reply line (without the newline); b"" if the daemon closed first."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            return data
        data += chunk
    return data[:-1]


def rpc(sock, method, params=None, id=1):
    request = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        request["params"] = params
    sock.sendall(json.dumps(request).encode() + b"\n")
    return json.loads(read_line(sock))


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def ctl(socket_path, *args, timeout=60):
    """Runs xdpvhostctl; returns (exit code, stdout, stderr)."""
    p = subprocess.run([XDPVHOSTCTL, "--socket", socket_path, *args], capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def wait_gone(path, timeout=5.0):
    deadline = time.monotonic() + timeout
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not os.path.exists(path)
