"""xdpvhost-sidecar: the KubeVirt network binding sidecar for xdpvhost.io.

    python3 -m xdpvhost_sidecar [--socket PATH] [--binding-name NAME]
        [--metadata-root DIR] [--socket-root DIR] [--default-mtu N]
        [--log-format text|json]

Serves until virt-launcher calls Shutdown, or SIGTERM/SIGINT/SIGHUP/SIGQUIT."""

import argparse
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass

from xdpvhost_dra import log_setup

from . import (DEFAULT_BINDING_NAME, DEFAULT_CONTAINER_SOCKET_ROOT, DEFAULT_HOOK_SOCKET,
               DEFAULT_METADATA_ROOT, DEFAULT_MTU, DRIVER_NAME)

log = logging.getLogger("xdpvhost_sidecar")

LOG_FORMAT_ENV = "XDPVHOST_SIDECAR_LOG_FORMAT"


@dataclass(frozen=True)
class Settings:
    binding_name: str
    metadata_root: str
    socket_root: str
    default_mtu: int
    default_queues: int = 1
    driver: str = DRIVER_NAME


def parse_args(argv):
    p = argparse.ArgumentParser(prog="xdpvhost-sidecar", description=__doc__.split("\n")[0])
    p.add_argument("--socket", default=DEFAULT_HOOK_SOCKET,
                   help=f"hook socket to serve (default {DEFAULT_HOOK_SOCKET})")
    p.add_argument("--binding-name",
                   default=os.environ.get("NETWORK_BINDING_PLUGIN_NAME") or DEFAULT_BINDING_NAME,
                   help="binding name of the interfaces to serve (default "
                        "$NETWORK_BINDING_PLUGIN_NAME, else %(default)s)")
    p.add_argument("--metadata-root", default=DEFAULT_METADATA_ROOT,
                   help="where DRA device metadata is mounted (default %(default)s)")
    p.add_argument("--socket-root", default=DEFAULT_CONTAINER_SOCKET_ROOT,
                   help="the DRA plugin's socket root inside the pod, used when the metadata "
                        "is not mounted here (default %(default)s)")
    p.add_argument("--default-mtu", type=int, default=DEFAULT_MTU,
                   help="MTU used when the metadata is not mounted here (the DRA plugin's "
                        "default, %(default)s)")
    p.add_argument("--default-queues", type=int, default=1,
                   help="queue pairs a port offers when the metadata is not mounted here (a "
                        "claim's default, %(default)s): a multiqueue VM's NIC is capped at it, "
                        "as QEMU refuses a netdev that asks for more than the port offers")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    # KubeVirt starts a binding's sidecar with the image's command and no
    # arguments: the image sets the format (deploy/Dockerfile, SIDECAR_LOG_FORMAT).
    p.add_argument("--log-format", default=os.environ.get(LOG_FORMAT_ENV, "text"),
                   help="json: one JSON object per line, with the VM's namespace and name "
                        f"(default: ${LOG_FORMAT_ENV}, else text)")
    args = p.parse_args(argv)
    if args.log_format not in log_setup.FORMATS:
        p.error(f"log format {args.log_format!r} (--log-format or ${LOG_FORMAT_ENV}): "
                f"one of {', '.join(log_setup.FORMATS)}")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    log_setup.setup(args.log_level.upper(), args.log_format)
    from .hook_server import make_server  # after logging: imports the stubs

    if not 1 <= args.default_queues <= 128:
        log.error("--default-queues must be from 1 to 128")
        return 2
    settings = Settings(args.binding_name, args.metadata_root, args.socket_root,
                        args.default_mtu, args.default_queues)
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, lambda signum, frame: stopping.set())
    os.makedirs(os.path.dirname(args.socket) or ".", exist_ok=True)
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    server = make_server(settings, stopping)
    try:
        server.add_insecure_port("unix:" + args.socket)
    except RuntimeError as e:
        log.error("cannot listen on %s: %s", args.socket, e)
        return 1
    server.start()
    log.info("serving KubeVirt hooks v1alpha3 on %s: binding %s, driver %s, metadata root %s, "
             "socket root %s, default mtu %d, default queues %d", args.socket,
             settings.binding_name, settings.driver, settings.metadata_root, settings.socket_root,
             settings.default_mtu, settings.default_queues)
    stopping.wait()
    server.stop(grace=2).wait()
    try:
        os.unlink(args.socket)
    except FileNotFoundError:
        pass
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
