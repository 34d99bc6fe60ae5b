"""The generated protobuf/gRPC modules of KubeVirt's hook API.

They are generated at build time (kubevirt/sidecar/generate-stubs.sh) and
never committed; the image puts them next to this package, a test build
names their folder in $XDPVHOST_HOOK_STUBS."""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
for _dir in (os.environ.get("XDPVHOST_HOOK_STUBS"), os.path.join(_here, "_generated")):
    if _dir and os.path.isdir(os.path.join(_dir, "kubevirt_hooks")) and _dir not in sys.path:
        sys.path.insert(0, _dir)

from kubevirt_hooks.info import api_info_pb2 as info_pb2  # noqa: E402
from kubevirt_hooks.info import api_info_pb2_grpc as info_grpc  # noqa: E402
from kubevirt_hooks.v1alpha3 import api_v1alpha3_pb2 as v1alpha3_pb2  # noqa: E402
from kubevirt_hooks.v1alpha3 import api_v1alpha3_pb2_grpc as v1alpha3_grpc  # noqa: E402

__all__ = ["info_pb2", "info_grpc", "v1alpha3_pb2", "v1alpha3_grpc"]
