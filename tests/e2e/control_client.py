"""xdpvhostd's control socket as the e2e suite uses it: one request per
connection (tests/pylib xvtest.control.Control speaks the JSON-RPC), and
every way the socket can fail told apart from an error the daemon answered.

The suite uses it when the daemon answers; every check built on it is skipped
(and says so) when the socket does not answer. Standard library only.
"""

from __future__ import annotations

import time

from xvtest.control import Control, RpcError


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

    def call(self, method: str, **params):
        """One request on a fresh connection; returns the result."""
        try:
            with Control(self.path, timeout=self.timeout) as c:
                return c.call(method, **params)
        except RpcError as e:
            raise ControlError(method, {"code": e.code, "message": e.message,
                                        "data": e.data}) from e
        except (OSError, ValueError, KeyError) as e:
            # refused, closed without a reply, timed out, or not JSON-RPC
            raise ControlUnavailable(f"{self.path}: {method}: {e!r}") from e

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
