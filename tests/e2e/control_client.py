"""JSON-RPC 2.0 client for xdpvhostd's control socket (one request per line,
one response per line; methods in proto/methods/*.json).

The suite uses it when the daemon answers; every check built on it is skipped
(and says so) when the socket does not answer. Standard library only.
"""

from __future__ import annotations

import json
import socket
import time


class ControlUnavailable(Exception):
    """The control socket does not exist, refuses, or does not answer."""


class ControlError(Exception):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, method: str, error: dict):
        super().__init__(f"{method}: {error.get('code')} {error.get('message')}")
        self.error = error


class ControlClient:
    def __init__(self, path: str, timeout: float = 5.0):
        self.path = path
        self.timeout = timeout
        self._next_id = 1

    def call(self, method: str, **params):
        """One request on a fresh connection; returns the result."""
        request = {"jsonrpc": "2.0", "method": method, "id": self._next_id}
        self._next_id += 1
        if params:
            request["params"] = params
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self.path)
            s.sendall(json.dumps(request).encode() + b"\n")
            buf = b""
            while b"\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        except OSError as e:
            raise ControlUnavailable(f"{self.path}: {e}") from e
        finally:
            s.close()
        if not buf.strip():
            raise ControlUnavailable(f"{self.path}: connection closed without a reply to {method}")
        try:
            reply = json.loads(buf.split(b"\n", 1)[0])
        except ValueError as e:
            raise ControlUnavailable(f"{self.path}: reply to {method} is not JSON: {buf[:200]!r}") from e
        if "error" in reply:
            raise ControlError(method, reply["error"])
        return reply.get("result")

    def answers(self) -> bool:
        try:
            self.call("status")
            return True
        except (ControlUnavailable, ControlError):
            return False

    def port_state(self, name: str) -> str | None:
        try:
            return self.call("port.get", name=name).get("state")
        except (ControlUnavailable, ControlError):
            return None

    def wait_port_state(self, name: str, states, timeout: float = 20.0) -> str | None:
        """Polls port.get until the port's state is one of states; returns the
        last state seen (None if the socket never answered)."""
        if isinstance(states, str):
            states = (states,)
        deadline = time.monotonic() + timeout
        last = None
        while True:
            last = self.port_state(name)
            if last in states or time.monotonic() >= deadline:
                return last
            time.sleep(0.1)
