"""xdpvhostd's control socket: JSON-RPC 2.0, one JSON object per line over
a unix stream socket (proto/README.md). One connection per call, so a
daemon restart between two calls costs nothing."""

import json
import socket

# proto/errors.json
NAME_IN_USE = -32001
NOT_FOUND = -32002
INVALID_PARAMS = -32602


class DaemonUnavailable(RuntimeError):
    """The control socket could not be reached or broke mid-call."""


class DaemonError(RuntimeError):
    """The daemon answered with a JSON-RPC error."""

    def __init__(self, method, error):
        self.method = method
        self.code = error.get("code")
        self.message = error.get("message", "")
        self.data = error.get("data")
        super().__init__(f"{method}: {self.message} (code {self.code})")


class DaemonControl:
    def __init__(self, path, timeout=10.0):
        self.path = path
        self.timeout = timeout
        self._next_id = 1

    def call(self, method, params=None):
        request = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        self._next_id += 1
        if params is not None:
            request["params"] = params
        line = json.dumps(request).encode() + b"\n"
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(self.timeout)
                s.connect(self.path)
                s.sendall(line)
                reply = b""
                while not reply.endswith(b"\n"):
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    reply += chunk
        except OSError as e:
            raise DaemonUnavailable(f"xdpvhostd control socket {self.path}: {e.strerror or e}") from e
        if not reply:
            raise DaemonUnavailable(f"xdpvhostd control socket {self.path}: closed without a reply to {method}")
        try:
            answer = json.loads(reply)
        except ValueError as e:
            raise DaemonUnavailable(f"xdpvhostd control socket {self.path}: unreadable reply to {method}: {e}")
        if not isinstance(answer, dict):
            raise DaemonUnavailable(f"xdpvhostd control socket {self.path}: reply to {method} is not an object")
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {"message": str(answer["error"])}
            raise DaemonError(method, error)
        return answer.get("result")

    def uplinks(self):
        return self.call("uplink.list") or []

    def ports(self):
        return self.call("port.list") or []

    def port(self, name):
        """port.get, or None when the daemon has no such port."""
        try:
            return self.call("port.get", {"name": name})
        except DaemonError as e:
            if e.code == NOT_FOUND:
                return None
            raise

    def add_port(self, params):
        return self.call("port.add", params)

    def remove_port(self, name):
        """port.remove; False when the daemon had no such port."""
        try:
            self.call("port.remove", {"name": name})
            return True
        except DaemonError as e:
            if e.code == NOT_FOUND:
                return False
            raise
