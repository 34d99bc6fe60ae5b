"""A JSON-RPC 2.0 client for xdpvhostd's control socket."""

import json
import socket


class RpcError(Exception):
    def __init__(self, error):
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.code = error.get("code")
        self.message = error.get("message")
        self.data = error.get("data")


class Control:
    def __init__(self, path, timeout=10.0):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
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
            raise RpcError(reply["error"])
        return reply["result"]
