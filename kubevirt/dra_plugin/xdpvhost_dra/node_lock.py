"""The plugin's one lock, held across the instances on a node: during a
rolling update the old and the new plugin pod run side by side (the kubelet
allows it since 1.33, each instance with sockets of its own), and both may
be called or reconcile. prepare, unprepare and reconcile hold it, so no two
of them, in one process or two, ever work at once: a thread lock for the
threads of this process, and flock(2) on <state-dir>/.lock for the other
instance (the state files are the claims' state both share). A process
that dies releases its flock with its last fd."""

import fcntl
import os
import threading


class NodeLock:
    FILE = ".lock"  # StateStore skips names starting with "."

    def __init__(self, state_dir):
        self.path = os.path.join(state_dir, self.FILE)
        self._thread = threading.Lock()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)

    def __enter__(self):
        self._thread.acquire()
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread.release()
            raise
        return self

    def __exit__(self, *exc):
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._thread.release()

    def close(self):
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
