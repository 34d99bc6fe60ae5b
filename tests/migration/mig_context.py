"""The e2e suite's Context (tests/e2e/e2e_context.py: guests, daemons,
helpers and namespaces stopped and deleted by cleanup()), with the work
root and namespace prefix of the migration suite, and own() for helpers
started elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from e2e_context import Context  # noqa: E402  (puts tests/pylib on the path too)

WORKROOT = "/tmp/xdpvhost-mig"
GUEST_MAC = "52:54:00:4d:49:47"


class MigContext(Context):
    def __init__(self, image: str, daemon_binary: str, verify_memory: bool = False, **kw):
        super().__init__(image, daemon_binary, workroot=WORKROOT, **kw)
        # The destination waits paused after the migration until its memory
        # was compared with the source's (memory_compare.py).
        self.verify_memory = verify_memory

    def own(self, proc: subprocess.Popen):
        self._bg.append(proc)
