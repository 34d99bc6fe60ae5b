"""dpdk-testpmd driven interactively (-i) through a pseudo terminal: one
process stays up while the test switches forwarding modes and reads port
counters on demand ("show port stats"), instead of restarting testpmd for
every measurement. A pty keeps testpmd's stdio line-buffered. testpmd runs
in a session of its own and gets SIGKILL when the test process dies."""

import os
import pty
import re
import select
import signal
import subprocess
import time

from .process import Child, die_with_parent, read_text

PROMPT = b"testpmd> "
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


class ConsoleError(RuntimeError):
    pass


class TestpmdConsole(Child):
    """cmd: the whole command line (xvtest.testpmd.eal_args ... -- -i ...);
    preexec: run in the child before it execs (e.g. joining a cgroup)."""

    def __init__(self, name, cmd, log_path, preexec=None):
        self.name = name
        self.cmd = cmd
        self.log_path = log_path
        self.preexec = preexec
        self.proc = None
        self.master = None
        self.buf = b""
        self.log = None

    def _child_setup(self):
        die_with_parent()
        if self.preexec:
            self.preexec()

    def start(self, timeout=30.0):
        self.log = open(self.log_path, "ab")
        self.log.write(("$ " + " ".join(self.cmd) + "\n").encode())
        master, slave = pty.openpty()
        self.master = master
        self.proc = subprocess.Popen(self.cmd, stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True, preexec_fn=self._child_setup,
                                     close_fds=True)
        os.close(slave)
        self._until(PROMPT, timeout)
        return self

    def _read_some(self, wait):
        r, _, _ = select.select([self.master], [], [], wait)
        if not r:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the slave side closed (testpmd exited)
            data = b""
        if not data:
            raise ConsoleError(f"testpmd {self.name} exited (rc={self.proc.poll()}):\n{self.tail()}")
        data = ANSI.sub(b"", data).replace(b"\r", b"")
        self.log.write(data)
        self.log.flush()
        self.buf += data
        return True

    def _until(self, marker, timeout):
        deadline = time.monotonic() + timeout
        while True:
            i = self.buf.find(marker)
            if i >= 0:
                out, self.buf = self.buf[:i], self.buf[i + len(marker):]
                return out.decode(errors="replace")
            if self.proc.poll() is not None and not self._read_some(0):
                raise ConsoleError(f"testpmd {self.name} exited (rc={self.proc.returncode}):\n"
                                   f"{self.tail()}")
            if time.monotonic() > deadline:
                raise ConsoleError(f"testpmd {self.name}: no prompt within {timeout}s:\n{self.tail()}")
            self._read_some(0.05)

    def command(self, line, timeout=20.0):
        """Runs one testpmd command; returns what it printed."""
        os.write(self.master, (line + "\n").encode())
        out = self._until(PROMPT, timeout)
        # The pty echoes the command line first.
        first, _, rest = out.partition("\n")
        return rest if first.strip() == line.strip() else out

    def port_stats(self, port=0):
        """Cumulative counters of one port: rx, tx, rx_missed, rx_errors, tx_errors, rx_nombuf."""
        out = self.command(f"show port stats {port}")
        def num(label):
            m = re.search(label + r":\s*(\d+)", out)
            return int(m.group(1)) if m else None
        stats = {"rx": num("RX-packets"), "rx_missed": num("RX-missed"), "rx_errors": num("RX-errors"),
                 "rx_nombuf": num("RX-nombuf"), "tx": num("TX-packets"), "tx_errors": num("TX-errors"),
                 "rx_bytes": num("RX-bytes"), "tx_bytes": num("TX-bytes"), "t": time.monotonic()}
        if stats["rx"] is None or stats["tx"] is None:
            raise ConsoleError(f"testpmd {self.name}: unreadable port stats:\n{out}")
        return stats

    def xstats(self, port=0):
        out = self.command(f"show port xstats {port}")
        return {k: int(v) for k, v in re.findall(r"^\s*([A-Za-z0-9_]+):\s*(\d+)\s*$", out, re.M)}

    def fwd_stream_stats(self):
        """Forwarding counters per RX queue, {(port, queue): {"rx", "tx"}}
        (testpmd prints them when it has more streams than ports)."""
        out = self.command("show fwd stats all")
        stats = {}
        for m in re.finditer(r"Forward Stats for RX Port=\s*(\d+)/Queue=\s*(\d+).*?\n"
                             r"\s*RX-packets:\s*(\d+)\s+TX-packets:\s*(\d+)", out):
            stats[(int(m.group(1)), int(m.group(2)))] = {"rx": int(m.group(3)), "tx": int(m.group(4))}
        return stats

    def stop(self, timeout=10.0):
        """quit, then SIGKILL the process group if it lingers."""
        if self.alive():
            try:
                os.write(self.master, b"stop\nquit\n")
                self.proc.wait(timeout)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        if self.master is not None:
            try:
                while self._read_some(0):
                    pass
            except (ConsoleError, OSError):
                pass
            os.close(self.master)
            self.master = None
        if self.log is not None and not self.log.closed:
            self.log.close()

    def tail(self, chars=3000):
        return read_text(self.log_path)[-chars:]
