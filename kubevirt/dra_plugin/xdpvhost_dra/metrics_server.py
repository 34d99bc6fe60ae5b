"""The plugin's metrics endpoint (--metrics-listen HOST:PORT): GET
/metrics in the Prometheus text format (prometheus_client's WSGI app), on
a server no pod can lock. With hostNetwork every pod on the node reaches
the port, so, as the daemon's metrics server does (docs/operating.md):

- at most MAX_CONNECTIONS connections, at most PER_CLIENT from one
  address; a newcomer past either limit evicts the connection that has
  been open longest (of its address, or of all);
- a connection gets DEADLINE_S for each read and write, and one request
  (HTTP/1.0: no keep-alive), so no client holds a thread for long;
- a thread per connection, so never more than MAX_CONNECTIONS threads."""

import ipaddress
import logging
import socket
import socketserver
import threading
import time
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

from prometheus_client import make_wsgi_app

log = logging.getLogger("xdpvhost-dra.metrics")

MAX_CONNECTIONS = 8
PER_CLIENT = 2
DEADLINE_S = 5.0


def parse_listen(text):
    """"HOST:PORT", "[V6]:PORT" or "V6:PORT" (the last ":N" is the port: a
    node address from the downward API comes without brackets) -> (host,
    port); ValueError otherwise."""
    wanted = f"{text!r}: want HOST:PORT, [IPV6]:PORT or IPV6:PORT"
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536 or not host:
        raise ValueError(wanted)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:
            if ipaddress.ip_address(host).version != 6:
                raise ValueError(wanted)
        except ValueError:
            raise ValueError(wanted) from None
    return host, int(port)


class _QuietHandler(WSGIRequestHandler):
    timeout = DEADLINE_S  # each read and write (StreamRequestHandler)

    def log_message(self, fmt, *args):
        pass


class MetricsServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True

    def __init__(self, listen, registry, max_connections=MAX_CONNECTIONS, per_client=PER_CLIENT):
        host, port = parse_listen(listen)
        self.address_family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        super().__init__((host, port), _QuietHandler)
        self.set_app(make_wsgi_app(registry))
        self.max_connections = max_connections
        self.per_client = per_client
        self._open = {}  # connection socket -> (client address, opened at)
        self._lock = threading.Lock()
        self.evicted = 0
        self._thread = None

    def server_bind(self):
        """As WSGIServer's, without HTTPServer's reverse DNS lookup of the
        address (which a node with slow DNS would wait for at start)."""
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]
        self.setup_environ()

    # ---- connection limits ------------------------------------------------
    def process_request(self, request, client_address):
        """Runs in the accepting thread, before the connection's own."""
        client, now = client_address[0], time.monotonic()
        with self._lock:
            mine = [s for s, (c, _) in self._open.items() if c == client]
            if len(mine) >= self.per_client:
                self._evict(min(mine, key=lambda s: self._open[s][1]))
            elif len(self._open) >= self.max_connections:
                self._evict(min(self._open, key=lambda s: self._open[s][1]))
            self._open[request] = (client, now)
        super().process_request(request, client_address)

    def _evict(self, victim):
        """Under the lock: its thread sees end of file or a broken pipe, ends
        and closes it (shutdown, not close: that thread still uses the fd)."""
        del self._open[victim]
        self.evicted += 1
        try:
            victim.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def shutdown_request(self, request):
        with self._lock:
            self._open.pop(request, None)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        """A client that timed out, was evicted or went away: its own loss."""
        log.debug("metrics connection from %s ended early", client_address[0])

    # ---- life cycle -------------------------------------------------------
    def start(self):
        self._thread = threading.Thread(target=self.serve_forever, name="metrics", daemon=True)
        self._thread.start()
        log.info("metrics on http://%s/metrics", _shown(self.server_address))
        return self

    def stop(self):
        self.shutdown()
        self.server_close()
        with self._lock:
            for s in list(self._open):
                self._evict(s)


def _shown(address):
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
