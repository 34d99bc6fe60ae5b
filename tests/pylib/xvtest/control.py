"""xdpvhostd's control socket (JSON-RPC 2.0, one request per line):

- connect / read_line / rpc: a raw connection, for tests of the framing itself;
- Control: one connection for many calls;
- call: one request on a fresh connection, every way the socket can fail
  (ControlUnavailable) told apart from an error the daemon answered (RpcError).
"""

import json
import socket


class RpcError(Exception):
    """The daemon answered with a JSON-RPC error object."""

    def __init__(self, error, method=None):
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{error.get('code')}: {error.get('message')}")
        self.method = method
        self.code = error.get("code")
        self.message = error.get("message")
        self.data = error.get("data")


class ControlUnavailable(ConnectionError):
    """The control socket does not exist, refuses, closes, times out or does
    not speak JSON-RPC."""


def connect(path, timeout=10.0):
    """A connected unix stream socket to `path`."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except OSError:
        s.close()
        raise
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
    """Sends one request on a raw connection; returns the whole reply object."""
    request = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        request["params"] = params
    sock.sendall(json.dumps(request).encode() + b"\n")
    return json.loads(read_line(sock))


class Control:
    """One connection; call() returns a result or raises RpcError."""

    def __init__(self, path, timeout=10.0):
        self.path = path
        self.sock = connect(path, timeout)
        self.file = self.sock.makefile("rwb")
        self.next_id = 1

    def close(self):
        self.file.close()
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def raw(self, line):
        """Sends one line as is and returns the parsed reply."""
        if isinstance(line, str):
            line = line.encode()
        self.file.write(line + b"\n")
        self.file.flush()
        reply = self.file.readline()
        if not reply:
            raise ConnectionError("control socket closed")
        return json.loads(reply)

    def call(self, method, **params):
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        self.next_id += 1
        if params:
            request["params"] = params
        reply = self.raw(json.dumps(request))
        if "error" in reply:
            raise RpcError(reply["error"], method)
        return reply["result"]


def call(path, method, params=None, timeout=10.0):
    """One request on a fresh connection: the result, RpcError, or
    ControlUnavailable (refused, closed without a reply, timed out, not JSON-RPC)."""
    try:
        with Control(path, timeout=timeout) as c:
            return c.call(method, **(params or {}))
    except RpcError:
        raise
    except (OSError, ValueError, KeyError) as e:
        raise ControlUnavailable(f"{path}: {method}: {e!r}") from e
