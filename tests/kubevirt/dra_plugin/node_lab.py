"""The node the plugin runs on, built from real parts for each test:

  netns xvdra-<pid>-node                              netns xvdra-<pid>-peer
  xdpvhostd, uplink up0 on xvdra-n0 (MTU 1400) <veth> xvdra-p0 10.77.13.1/24
  the DRA plugin (shares the node's network, as a hostNetwork pod does)
  the API server stand-in's listening socket (on the node's loopback)
  kubelet root, socket root, CDI root, state dir: /tmp/xvdra-<pid>-<test>/

The kubelet side is the test itself, calling the plugin's unix sockets over
gRPC with the generated stubs. Everything is torn down by the test's
cleanups, also when it fails; namespaces a killed run left are deleted at
the next start."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "pylib"))
sys.path.insert(0, os.path.join(ROOT, "kubevirt", "dra_plugin"))

from xvtest import netns  # noqa: E402
from xvtest.control import RpcError  # noqa: E402,F401
from xvtest.daemon import Daemon, wait_until  # noqa: E402,F401
from xvtest.process import dies_with_parent  # noqa: E402

import grpc  # noqa: E402
from xdpvhost_dra import stubs as stub_loader  # noqa: E402

PLUGIN = os.path.join(ROOT, "kubevirt", "dra_plugin", "xdpvhost-dra-plugin")
PYTHON = "/usr/bin/python3"  # Debian's: python3-grpcio and python3-kubernetes live there
DRIVER = "xdpvhost.io"
NODE_NAME = "node-a"
PREFIX = "xvdra-"
METRICS_PORT = 19478  # the plugin's --metrics-listen, on the node namespace's loopback
NODE_IF, PEER_IF = "xvdra-n0", "xvdra-p0"
UPLINK_MTU = 1400
PEER_IP = "10.77.13.1"

STUBS = stub_loader.load()


def daemon_binary():
    return os.environ.get("XDPVHOSTD") or os.path.join(ROOT, "build", "daemon", "xdpvhostd")


class Network:
    """Node and peer namespaces joined by veth pairs (one per uplink)."""

    def __init__(self, tag):
        pid = os.getpid()
        self.node = f"{PREFIX}{pid}-{tag}-n"
        self.peer = f"{PREFIX}{pid}-{tag}-p"

    def create(self):
        netns.remove_orphaned(PREFIX)
        netns.create(self.node)
        netns.create(self.peer)
        self.add_link(NODE_IF, PEER_IF)
        netns.run("ip", "-n", self.peer, "addr", "add", f"{PEER_IP}/24", "dev", PEER_IF)
        return self

    def add_link(self, node_if, peer_if, mtu=UPLINK_MTU):
        netns.run("ip", "-n", self.node, "link", "add", node_if, "mtu", str(mtu), "type", "veth",
                  "peer", "name", peer_if, "mtu", str(mtu), "netns", self.peer)
        # A software peer must send complete checksums (docs/operating.md: known facts).
        netns.run_in(self.peer, "ethtool", "-K", peer_if, "tx", "off")
        netns.run("ip", "-n", self.node, "link", "set", node_if, "up")
        netns.run("ip", "-n", self.peer, "link", "set", peer_if, "up")

    def delete(self):
        netns.delete(self.peer)
        netns.delete(self.node)


def daemon_config_keys():
    proto = os.environ.get("XDPVHOST_PROTO") or os.path.join(ROOT, "proto")
    with open(os.path.join(proto, "config.schema.json")) as f:
        return set(json.load(f).get("properties", {}))


def start_daemon(workdir, net, socket_root, uplinks=(("up0", NODE_IF),)):
    config = {"uplinks": [{"name": n, "interface": i, "bind": "copy"} for n, i in uplinks],
              "metrics": {"listen": ""}}
    if "socket_dirs" in daemon_config_keys():
        # Port sockets only under the plugin's --socket-root (kubevirt/README.md).
        config["socket_dirs"] = [socket_root]
    bpf = os.environ.get("XDPVHOST_BPF_OBJECT")
    if bpf:
        config["bpf_object"] = bpf
    # SIGKILL for the daemon when the test process dies, however it dies (a
    # ctest timeout): setpriv sets PR_SET_PDEATHSIG and execs it (same pid).
    os.makedirs(workdir, exist_ok=True)
    wrapper = os.path.join(workdir, "xdpvhostd-dies-with-test")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec setpriv --pdeathsig KILL {daemon_binary()} "$@"\n')
    os.chmod(wrapper, 0o755)
    d = Daemon(workdir, config, binary=wrapper, netns=net.node, without_fork=True)
    d.start()
    wait_until(lambda: all(q["bind_mode"] == "copy" for u in d.call("uplink.list") for q in u["queues"]),
               timeout=20, what="uplink queues bound")
    return d


class Plugin:
    """The plugin as a DaemonSet would run it, in the node's network namespace."""

    def __init__(self, workdir, net, control_socket, kubeconfig, extra=(), instance=None,
                 metrics_port=METRICS_PORT):
        """instance: a rolling-update instance (--rolling-update-uid), with
        sockets, log and metrics port of its own beside another instance."""
        self.workdir = workdir
        self.kubelet_root = os.path.join(workdir, "kubelet")
        self.socket_root = os.path.join(workdir, "sockets")
        self.cdi_root = os.path.join(workdir, "cdi")
        self.state_dir = os.path.join(workdir, "state")
        if instance is None:
            self.dra_socket = os.path.join(self.kubelet_root, "plugins", DRIVER, "dra.sock")
            self.reg_socket = os.path.join(self.kubelet_root, "plugins_registry", f"{DRIVER}-reg.sock")
            extra = tuple(extra)
        else:
            self.dra_socket = os.path.join(self.kubelet_root, "plugins", DRIVER, f"dra-{instance}.sock")
            self.reg_socket = os.path.join(self.kubelet_root, "plugins_registry", f"{DRIVER}-{instance}-reg.sock")
            extra = ("--rolling-update-uid", instance, *extra)
        self.instance = instance
        self.log_path = os.path.join(workdir, "plugin.log" if instance is None else f"plugin-{instance}.log")
        self.cmd = ["ip", "netns", "exec", net.node, PYTHON, PLUGIN,
                    "--kubelet-root", self.kubelet_root, "--control-socket", control_socket,
                    "--socket-root", self.socket_root, "--cdi-root", self.cdi_root,
                    "--state-dir", self.state_dir, "--node-name", NODE_NAME,
                    "--kubeconfig", kubeconfig, "--reconcile-interval", "0.5", "--launcher-wait", "1",
                    "--metrics-listen", f"127.0.0.1:{metrics_port}", *extra]
        self.proc = None
        self.starts = 0

    def start(self, timeout=30.0):
        self.starts += 1
        with open(self.log_path, "a") as log:
            log.write(f"===== test: plugin start {self.starts}\n")
        self.log = open(self.log_path, "ab")
        # No preexec_fn (no fork() with gRPC loaded): see dies_with_parent.
        self.proc = subprocess.Popen(dies_with_parent(self.cmd), stdout=self.log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"plugin exited with {self.proc.returncode}:\n{self.tail()}")
            if os.path.exists(self.reg_socket):
                try:
                    self.get_info(timeout=2)
                    return self
                except grpc.RpcError:
                    pass
            time.sleep(0.05)
        raise TimeoutError(f"plugin did not register within {timeout}s:\n{self.tail()}")

    def stop(self, timeout=15.0):
        """SIGTERM; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self.log.close()

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc is not None and not self.log.closed:
            self.log.close()

    def tail(self, lines=60):
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-lines:]).decode(errors="replace")
        except OSError:
            return ""

    # ---- the kubelet's calls ------------------------------------------------
    def _channel(self, path):
        return grpc.insecure_channel("unix:" + path)

    def call_dra(self, method, request=b"", timeout=5):
        """Calls a DRA method by its full gRPC name with raw request bytes
        (no stubs between the test and the wire); returns the raw answer."""
        with self._channel(self.dra_socket) as ch:
            return ch.unary_unary(method)(request, timeout=timeout)

    def get_info(self, timeout=5):
        with self._channel(self.reg_socket) as ch:
            return STUBS.reg_grpc.RegistrationStub(ch).GetInfo(STUBS.reg_pb2.InfoRequest(), timeout=timeout)

    def notify(self, registered, error="", timeout=5):
        with self._channel(self.reg_socket) as ch:
            return STUBS.reg_grpc.RegistrationStub(ch).NotifyRegistrationStatus(
                STUBS.reg_pb2.RegistrationStatus(plugin_registered=registered, error=error), timeout=timeout)

    def _claims(self, claims, pb2=None):
        pb2 = pb2 or STUBS.dra_pb2
        return [pb2.Claim(namespace=ns, name=name, uid=uid) for ns, name, uid in claims]

    @staticmethod
    def _dra(version):
        """The messages and service stub of DRA `version` ("v1", or "v1beta1"
        as a kubelet of 1.32 or 1.33 calls it: the same messages)."""
        return STUBS.dra_pb2, STUBS.dra_v1beta1_grpc if version == "v1beta1" else STUBS.dra_grpc

    def prepare(self, *claims, timeout=45, version="v1"):
        """claims: (namespace, name, uid); returns {uid: NodePrepareResourceResponse}."""
        pb2, grpc_module = self._dra(version)
        with self._channel(self.dra_socket) as ch:
            r = grpc_module.DRAPluginStub(ch).NodePrepareResources(
                pb2.NodePrepareResourcesRequest(claims=self._claims(claims, pb2)), timeout=timeout)
        return dict(r.claims)

    def unprepare(self, *claims, timeout=45, version="v1"):
        pb2, grpc_module = self._dra(version)
        with self._channel(self.dra_socket) as ch:
            r = grpc_module.DRAPluginStub(ch).NodeUnprepareResources(
                pb2.NodeUnprepareResourcesRequest(claims=self._claims(claims, pb2)), timeout=timeout)
        return dict(r.claims)


def scrape(net, source="127.0.0.1"):
    """The plugin's /metrics, fetched from inside the node's namespace
    (from address `source`: any of 127/8) and parsed by prometheus_client's
    parser: {(sample name, ((label, value), ...)): value}."""
    from prometheus_client.parser import text_string_to_metric_families

    def get():
        with socket.create_connection(("127.0.0.1", METRICS_PORT), timeout=10,
                                      source_address=(source, 0)) as s:
            s.sendall(b"GET /metrics HTTP/1.0\r\nHost: node\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return data
                data += chunk
    raw = netns.in_netns(net.node, get)
    head, _, body = raw.partition(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.0 200"):
        raise RuntimeError(f"scrape: {head[:200]!r}")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body.decode()) for s in family.samples}


def connect_idle(net, source):
    """A connection to the plugin's metrics port from `source` that sends nothing."""
    return netns.in_netns(net.node, lambda: socket.create_connection(
        ("127.0.0.1", METRICS_PORT), timeout=10, source_address=(source, 0)))


def plugin_cluster_role():
    """The plugin's ClusterRole as deployed (deploy/kubernetes/base/rbac.yaml)."""
    import yaml
    with open(os.path.join(ROOT, "deploy", "kubernetes", "base", "rbac.yaml")) as f:
        for doc in yaml.safe_load_all(f):
            if doc and doc.get("kind") == "ClusterRole" and doc["metadata"]["name"] == "xdpvhost-dra-plugin":
                return doc
    raise RuntimeError("no ClusterRole xdpvhost-dra-plugin in deploy/kubernetes/base/rbac.yaml")


def make_workdir(tag):
    path = f"/tmp/{PREFIX}{os.getpid()}-{tag}"
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path
