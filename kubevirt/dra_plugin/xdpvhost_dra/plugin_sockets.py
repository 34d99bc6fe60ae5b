"""The two gRPC servers the kubelet talks to: the DRA service on
<kubelet-root>/plugins/xdpvhost.io/dra.sock in versions v1 and v1beta1
(kubelets of 1.34 and newer call v1, those of 1.32 and 1.33 v1beta1; a
node pool mid-upgrade has both), started first, then the
registration service on <kubelet-root>/plugins_registry/xdpvhost.io-reg.sock
that the kubelet's plugin watcher finds (kubevirt/INTERFACES.md, Kubelet
plugin sockets and registration). Both sockets are removed on stop.

With a rolling-update instance (the pod's UID), the sockets are the
instance's own, dra-<uid>.sock and xdpvhost.io-<uid>-reg.sock, as the
kubelet (1.33 and newer) takes them from the upstream plugin helper: the
old and the new pod of a DaemonSet update then serve side by side, the
kubelet calls the newest, and the old one's stop removes only its own
sockets. Sockets of this driver that no process listens on any more (a
pod that was killed) are removed at start."""

import logging
import os
import re
import socket
import stat
import traceback
from concurrent import futures

import grpc

from . import DRIVER_NAME, names, plugin_metrics

log = logging.getLogger("xdpvhost-dra.grpc")

PLUGIN_TYPE = "DRAPlugin"
# What GetInfo advertises, newest first: the kubelet takes the first it
# supports. Each with the generated modules that serve it.
SUPPORTED_VERSIONS = ["v1.DRAPlugin", "v1beta1.DRAPlugin"]


def dra_services(stubs):
    """The generated service module of each DRA version served, in
    SUPPORTED_VERSIONS' order. Their messages are v1's (the same bytes on
    the wire)."""
    return [stubs.dra_grpc, stubs.dra_v1beta1_grpc]


def dra_servicer(pb2, grpc_module, driver):
    """The DRA service of one version; every version calls the same driver."""

    class DraService(grpc_module.DRAPluginServicer):
        def NodePrepareResources(self, request, context):
            response = pb2.NodePrepareResourcesResponse()
            for claim in request.claims:
                try:
                    devices, error = driver.prepare(claim.namespace, claim.name, claim.uid)
                except Exception as e:  # a bug must not fail the other claims
                    log.error("prepare %s/%s: internal error:\n%s", claim.namespace, claim.name,
                              traceback.format_exc())
                    plugin_metrics.call_errors.labels("prepare", "internal").inc()
                    devices, error = [], f"internal error in the {DRIVER_NAME} plugin: {e}"
                entry = response.claims[claim.uid]
                entry.error = error
                if not error:
                    for d in devices:
                        entry.devices.add(**d)
            return response

        def NodeUnprepareResources(self, request, context):
            response = pb2.NodeUnprepareResourcesResponse()
            for claim in request.claims:
                try:
                    error = driver.unprepare(claim.namespace, claim.name, claim.uid)
                except Exception as e:
                    log.error("unprepare %s/%s: internal error:\n%s", claim.namespace, claim.name,
                              traceback.format_exc())
                    plugin_metrics.call_errors.labels("unprepare", "internal").inc()
                    error = f"internal error in the {DRIVER_NAME} plugin: {e}"
                response.claims[claim.uid].error = error
            return response

    return DraService()


def registration_servicer(stubs, endpoint):
    pb2 = stubs.reg_pb2

    class Registration(stubs.reg_grpc.RegistrationServicer):
        def GetInfo(self, request, context):
            return pb2.PluginInfo(type=PLUGIN_TYPE, name=DRIVER_NAME, endpoint=endpoint,
                                  supported_versions=SUPPORTED_VERSIONS)

        def NotifyRegistrationStatus(self, request, context):
            if request.plugin_registered:
                log.info("kubelet registered the plugin (endpoint %s)", endpoint)
                return pb2.RegistrationStatusResponse()
            log.error("kubelet refused the registration: %s", request.error)
            context.abort(grpc.StatusCode.UNKNOWN, f"failed registration process: {request.error}")

    return Registration()


def _listen(path, add, workers):
    os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
    try:
        os.unlink(path)  # a socket a killed plugin left behind
    except FileNotFoundError:
        pass
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers),
                         options=[("grpc.so_reuseport", 0)])
    add(server)
    if server.add_insecure_port("unix:" + path) == 0:
        raise RuntimeError(f"cannot listen on {path}")
    server.start()
    return server


def socket_paths(kubelet_root, instance=None):
    """(DRA socket, registration socket) of an instance (None: the one
    plugin of a node without rolling updates)."""
    plugin_dir = os.path.join(kubelet_root, "plugins", DRIVER_NAME)
    registry = os.path.join(kubelet_root, "plugins_registry")
    if instance is None:
        return os.path.join(plugin_dir, "dra.sock"), os.path.join(registry, f"{DRIVER_NAME}-reg.sock")
    return (os.path.join(plugin_dir, f"dra-{instance}.sock"),
            os.path.join(registry, f"{DRIVER_NAME}-{instance}-reg.sock"))


def _listened_on(path):
    """Whether a process accepts connections on the socket `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC) as s:
        s.settimeout(1.0)
        try:
            s.connect(path)
            return True
        except (ConnectionRefusedError, FileNotFoundError):
            return False
        except OSError:
            return True  # busy or slow: alive, or not ours to judge


def remove_dead_sockets(kubelet_root, keep):
    """Removes this driver's sockets (both kinds, any instance) that nobody
    listens on, but the paths in `keep`; returns what was removed."""
    plugin_dir = os.path.join(kubelet_root, "plugins", DRIVER_NAME)
    registry = os.path.join(kubelet_root, "plugins_registry")
    candidates = []
    for directory, pattern in ((registry, rf"^{re.escape(DRIVER_NAME)}(-{names.UID_PATTERN})?-reg\.sock$"),
                               (plugin_dir, rf"^dra(-{names.UID_PATTERN})?\.sock$")):
        try:
            entries = sorted(os.listdir(directory))
        except FileNotFoundError:
            continue
        candidates += [os.path.join(directory, e) for e in entries if re.match(pattern, e)]
    removed = []
    for path in candidates:
        if path in keep or not stat.S_ISSOCK(os.lstat(path).st_mode) or _listened_on(path):
            continue
        try:
            os.unlink(path)
            removed.append(path)
        except FileNotFoundError:
            pass
    return removed


class PluginSockets:
    def __init__(self, stubs, driver, kubelet_root, instance=None):
        self.stubs = stubs
        self.driver = driver
        self.kubelet_root = kubelet_root
        self.dra_path, self.reg_path = socket_paths(kubelet_root, instance)
        self.servers = []

    def start(self):
        for path in remove_dead_sockets(self.kubelet_root, keep={self.dra_path, self.reg_path}):
            log.info("removed %s: no plugin serves it any more", path)
        services = [(m, dra_servicer(self.stubs.dra_pb2, m, self.driver))
                    for m in dra_services(self.stubs)]

        def add_dra(server):
            for module, servicer in services:
                module.add_DRAPluginServicer_to_server(servicer, server)
        self.servers.append((self.dra_path, _listen(self.dra_path, add_dra, 4)))
        log.info("DRA service %s on %s", ", ".join(SUPPORTED_VERSIONS), self.dra_path)
        reg = registration_servicer(self.stubs, self.dra_path)
        self.servers.append((self.reg_path, _listen(
            self.reg_path, lambda s: self.stubs.reg_grpc.add_RegistrationServicer_to_server(reg, s), 2)))
        log.info("registration service on %s", self.reg_path)

    def stop(self, grace=2.0):
        # Registration first: the kubelet stops sending work before the DRA
        # service goes.
        for path, server in reversed(self.servers):
            server.stop(grace).wait()
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            log.info("stopped serving %s (socket removed)", path)
        self.servers = []
