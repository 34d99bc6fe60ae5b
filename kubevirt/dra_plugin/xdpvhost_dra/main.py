"""Wires the plugin together: stubs, daemon control client, API client,
state, the two gRPC servers, and the loop that reconciles claims and the
ResourceSlice until SIGTERM or SIGINT."""

import logging
import os
import signal
import sys
import threading

from . import DRIVER_NAME, log_setup, options, plugin_metrics, resource_slice, stubs, uplink_devices
from .claim_driver import ClaimDriver
from .daemon_control import DaemonControl, DaemonError, DaemonUnavailable
from .kube_api import ApiError, KubeApi
from .metrics_server import MetricsServer
from .plugin_sockets import PluginSockets
from .node_events import Node
from .resource_slice import SlicePublisher
from .socket_dir import SocketDirs
from .socket_watch import SocketWatch
from .state_store import StateStore

log = logging.getLogger("xdpvhost-dra")


class Devices:
    """The uplink devices as last read from the daemon (uplink.list)."""

    def __init__(self, daemon, default_mtu):
        self.daemon = daemon
        self.default_mtu = default_mtu
        self.current = None
        self._warned = set()
        self._lock = threading.Lock()

    def refresh(self):
        devs = uplink_devices.from_uplinks(self.daemon.uplinks(), self.default_mtu, self._warned)
        with self._lock:
            self.current = devs
        return devs

    def by_name(self):
        """For prepare: fresh from the daemon, or the last list if it is down;
        by the names of the uplinks' devices in either device mode, so that
        a claim allocated before the mode changed is prepared too."""
        try:
            devs = self.refresh()
        except (DaemonUnavailable, DaemonError):
            with self._lock:
                devs = self.current
            if devs is None:
                raise
        return uplink_devices.by_device_name(devs, resource_slice.MAX_SLOTS)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["probe"]:
        from . import probe
        return probe.main(argv[1:])
    o = options.parse(argv)
    log_setup.setup(getattr(logging, o.log_level.upper()), o.log_format)
    os.umask(0o022)
    try:
        s = stubs.load()
    except stubs.StubsError as e:
        log.error("%s", e)
        return 1
    log.info("%s kubelet plugin starting: node %s, kubelet root %s, daemon %s, socket root %s, "
             "CDI %s, state %s, device mode %s", DRIVER_NAME, o.node_name, o.kubelet_root, o.control_socket,
             o.socket_root, o.cdi_root, o.state_dir, o.device_mode)
    try:
        api = KubeApi(o.kubeconfig)
    except Exception as e:
        log.error("no API server credentials: %s", e)
        return 1
    daemon = DaemonControl(o.control_socket)
    devices = Devices(daemon, o.default_mtu)
    sockets = SocketDirs(o.socket_root, o.socket_owner[0], o.socket_owner[1], o.socket_dir_mode,
                         o.selinux_label, o.socket_acl)
    store = StateStore(o.state_dir)
    driver = ClaimDriver(o, daemon, api, sockets, store, devices.by_name)
    node = Node(api, o.node_name)
    publisher = SlicePublisher(api, node, o.ports_capacity, o.device_mode, o.ports_per_uplink)
    socket_watch = SocketWatch(api, node, o.socket_grace)

    stop = threading.Event()

    def on_signal(signum, frame):
        log.info("%s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def reconcile_claims():
        try:
            ok, failed = driver.reconcile()
            if ok or failed:
                log.debug("reconciled %d prepared claim(s), %d failed", ok, failed)
        except Exception:
            log.exception("reconcile failed")

    # Put back what a restarted daemon lost before the kubelet can call.
    reconcile_claims()
    metrics = None
    if o.metrics_listen:
        try:
            metrics = MetricsServer(o.metrics_listen, plugin_metrics.REGISTRY).start()
        except OSError as e:
            log.error("--metrics-listen %s: %s", o.metrics_listen, e)
            return 1
    plugin = PluginSockets(s, driver, o.kubelet_root, o.rolling_update_uid)
    try:
        plugin.start()
    except Exception as e:
        log.error("%s", e)
        plugin.stop()
        if metrics:
            metrics.stop()
        return 1

    last_problem = "not tried yet"
    while not stop.is_set():
        try:
            devs = devices.refresh()
            publisher.publish(devs)
            problem = None
        except (DaemonUnavailable, DaemonError, ApiError) as e:
            problem = f"ResourceSlice not published: {e}"
            plugin_metrics.slice_errors.inc()
        if problem != last_problem:
            (log.warning if problem else log.info)(problem or "ResourceSlice in sync")
            last_problem = problem
        reconcile_claims()
        try:
            socket_watch.check(store.all())
        except Exception:
            log.exception("socket check failed")
        stop.wait(o.reconcile_interval)

    plugin.stop()
    if metrics:
        metrics.stop()
    log.info("stopped")
    return 0
