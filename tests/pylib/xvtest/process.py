"""Child processes of a test run: they die with the run that started them
(PR_SET_PDEATHSIG), and the log files they write are read back as text."""

import ctypes
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn for subprocess.Popen: the child gets SIGKILL when the
    thread that started it ends (PR_SET_PDEATHSIG is the parent thread's, not
    its process's), however that happens. A child that must outlive a
    worker thread is started from one that lives as long as it should."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass


def dies_with_parent(cmd):
    """`cmd` run through setpriv --pdeathsig KILL: what die_with_parent does,
    without a preexec_fn. A preexec_fn makes subprocess fork(), which runs
    every atfork handler; gRPC 1.51's (Debian 12's python3-grpcio) waits for
    its thread pool to go idle and, with a pool thread busy, waits forever
    (grpc/grpc#31885: "Waiting for thread pool to idle before forking").
    Without one, subprocess uses vfork(), which runs none. setpriv sets the
    signal and execs: the child keeps its pid."""
    return ["setpriv", "--pdeathsig", "KILL", "--", *cmd]


def read_text(path, start=0):
    """The file from byte `start` on, decoded leniently; "" if it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def last_lines(text, n):
    """The last n lines of text, joined with newlines."""
    return "\n".join(text.splitlines()[-n:])


class Child:
    """What every wrapper of one child process (self.proc, a Popen or None
    before it started) answers the same way."""

    proc = None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    @property
    def returncode(self):
        return self.proc.poll() if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None
