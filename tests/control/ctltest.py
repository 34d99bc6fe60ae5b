"""What the tests/control suites share beyond tests/pylib/xvtest: where
their binaries are, where their sockets and metrics listeners live, and the
daemon as they run it (replies checked against proto/ by the daemon itself)."""

import atexit
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
from xvtest import paths  # noqa: E402
from xvtest.daemon import Daemon  # noqa: E402
from xvtest.testpmd import Testpmd  # noqa: E402

BASE = "/tmp/xdpvhost-ctl-test"
# Metrics listeners of these suites use 127.0.0.1 ports from here up.
METRICS_PORT = 19477
# An interface name no machine has: uplinks on it wait for it to appear and
# never touch a real NIC.
ABSENT_IF = "xvctl-noif0"

XDPVHOSTD = paths.xdpvhostd()
XDPVHOSTCTL = paths.built("XDPVHOSTCTL", "ctl", "xdpvhostctl")
TRAFFIC_PAIR = paths.built("XDPVHOST_TRAFFIC_PAIR", "tests", "control", "traffic_pair")


def workdir(name):
    path = os.path.join(BASE, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def checked_daemon(path, config, extra_args=("--check-replies",), **kw):
    """A Daemon run with `extra_args`; no daemon outlives the test, whatever happens to it."""
    daemon = Daemon(path, config, binary=XDPVHOSTD, args=extra_args, **kw)
    atexit.register(daemon.kill)
    return daemon


def testpmd_guest(name, socket_path, mac, mode, workdir, **kw):
    """A dpdk-testpmd virtio_user guest (not started) with this suite's EAL file prefix."""
    return Testpmd(name, socket_path, mac, mode, workdir, file_prefix=f"xvctl-{name}", **kw)


def ctl(socket_path, *args, timeout=60):
    """Runs xdpvhostctl; returns (exit code, stdout, stderr)."""
    p = subprocess.run([XDPVHOSTCTL, "--socket", socket_path, *args], capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr
