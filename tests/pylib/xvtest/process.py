"""Child processes that must not outlive the test run that started them."""

import ctypes
import signal

_PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn for subprocess.Popen: the child gets SIGKILL when the
    process that started it dies (PR_SET_PDEATHSIG), however that happens."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass
