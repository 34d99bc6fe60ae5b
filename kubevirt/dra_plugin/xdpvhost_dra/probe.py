"""The plugin's liveness probe (`xdpvhost-dra-plugin probe`): what the
kubelet relies on, asked as the kubelet asks it. GetInfo on the
registration socket must name this driver and its DRA socket, and an empty
NodePrepareResources on that socket must be answered, both within the
timeout. A plugin whose gRPC servers hang (or whose sockets are gone)
fails it, and the kubelet restarts its container; a plugin that answers
but cannot reach the daemon or the API server passes (the claims' errors
say so, and a restart would not help)."""

import argparse
import sys

import grpc

from . import DRIVER_NAME, stubs
from .options import add_rolling_update_uid
from .plugin_sockets import PLUGIN_TYPE, socket_paths


def probe(kubelet_root, timeout, instance=None):
    """None when the plugin answers as the kubelet needs, else why not."""
    s = stubs.load()
    reg = socket_paths(kubelet_root, instance)[1]
    try:
        with grpc.insecure_channel("unix:" + reg) as ch:
            info = s.reg_grpc.RegistrationStub(ch).GetInfo(s.reg_pb2.InfoRequest(), timeout=timeout)
    except grpc.RpcError as e:
        return f"registration socket {reg}: GetInfo: {e.code().name}: {e.details()}"
    if info.type != PLUGIN_TYPE or info.name != DRIVER_NAME:
        return f"registration socket {reg}: GetInfo names {info.type} {info.name!r}"
    try:
        with grpc.insecure_channel("unix:" + info.endpoint) as ch:
            answer = s.dra_grpc.DRAPluginStub(ch).NodePrepareResources(
                s.dra_pb2.NodePrepareResourcesRequest(), timeout=timeout)
    except grpc.RpcError as e:
        return f"DRA socket {info.endpoint}: NodePrepareResources: {e.code().name}: {e.details()}"
    if answer.claims:
        return f"DRA socket {info.endpoint}: an empty NodePrepareResources answered {len(answer.claims)} claims"
    return None


def main(argv):
    p = argparse.ArgumentParser(prog="xdpvhost-dra-plugin probe",
                                description="Liveness probe: exit 0 while the plugin answers the kubelet.")
    p.add_argument("--kubelet-root", default="/var/lib/kubelet", metavar="DIR")
    p.add_argument("--timeout", type=float, default=3.0, metavar="SECONDS",
                   help="for each of the two calls (default: %(default)s)")
    add_rolling_update_uid(p)  # an exec probe expands no $(VAR): $POD_UID from the environment
    o = p.parse_args(argv)
    try:
        problem = probe(o.kubelet_root, o.timeout, o.rolling_update_uid)
    except stubs.StubsError as e:
        problem = str(e)
    if problem:
        print(f"not alive: {problem}", file=sys.stderr)
        return 1
    print("alive")
    return 0
