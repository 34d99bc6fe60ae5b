"""The gRPC stubs of the kubelet APIs, generated from the .proto files in
kubevirt/proto by protoc and the gRPC python plugin (never committed).

generate(out_dir) writes them (atomically: a new directory renamed into
place) with a stamp holding a hash of the .proto files; load() imports them
from stubs_dir(), regenerating first when the stamp does not match the
.proto files (or no stubs are there). An image built without the .proto
files or protoc uses the stubs it was built with (XDPVHOST_DRA_STUBS_DIR).
"""

import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from types import SimpleNamespace

PROTO_FILES = (
    "k8s.io/kubelet/pkg/apis/dra/v1/api.proto",
    "k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto",
    "k8s.io/kubelet/pkg/apis/dra/v1beta1/api.proto",
)
STAMP = "stubs.stamp.json"
GRPC_PLUGIN = "/usr/bin/grpc_python_plugin"


class StubsError(RuntimeError):
    pass


def proto_root():
    env = os.environ.get("XDPVHOST_DRA_PROTO_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, "..", "..", "proto"))


def stubs_dir():
    env = os.environ.get("XDPVHOST_DRA_STUBS_DIR")
    if env:
        return env
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "xdpvhost-dra", "stubs")


def proto_key(root):
    """Hash of the .proto files; None when they are not there."""
    h = hashlib.sha256()
    for rel in PROTO_FILES:
        try:
            with open(os.path.join(root, rel), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return None
        h.update(rel.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def _stamp_key(out_dir):
    try:
        with open(os.path.join(out_dir, STAMP)) as f:
            return json.load(f).get("key")
    except (OSError, ValueError):
        return None


def _module_dir(rel_proto):
    """protoc's python_out writes k8s.io/x.proto's module as k8s/io/x_pb2.py,
    the gRPC plugin its file as k8s.io/x_pb2_grpc.py but imports the first as
    k8s.io.x (package k8s, subpackage io): both belong in k8s/io/."""
    return os.path.dirname(rel_proto).replace(".", "/")


def generate(out_dir, root=None):
    """Writes the stubs to out_dir unless its stamp already matches."""
    root = root or proto_root()
    key = proto_key(root)
    if key is None:
        raise StubsError(f"the .proto files are not under {root} ({', '.join(PROTO_FILES)})")
    if _stamp_key(out_dir) == key:
        return out_dir
    protoc = shutil.which("protoc")
    if protoc is None or not os.access(GRPC_PLUGIN, os.X_OK):
        raise StubsError(f"stubs in {out_dir} are missing or stale and protoc or {GRPC_PLUGIN} "
                         "is not installed (Debian: protobuf-compiler, protobuf-compiler-grpc)")
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".stubs-", dir=parent)
    try:
        cmd = [protoc, f"-I{root}", f"--python_out={tmp}", f"--grpc_out={tmp}",
               f"--plugin=protoc-gen-grpc={GRPC_PLUGIN}", *PROTO_FILES]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise StubsError(f"{' '.join(cmd)}: {p.stderr.strip()}")
        for rel in PROTO_FILES:
            base = os.path.splitext(os.path.basename(rel))[0]
            grpc_file = os.path.join(tmp, os.path.dirname(rel), base + "_pb2_grpc.py")
            target = os.path.join(tmp, _module_dir(rel), base + "_pb2_grpc.py")
            if grpc_file != target:
                os.makedirs(os.path.dirname(target), exist_ok=True)
                os.replace(grpc_file, target)
        for top in os.listdir(tmp):
            if "." in top:  # what the gRPC plugin left of k8s.io/...
                shutil.rmtree(os.path.join(tmp, top))
        with open(os.path.join(tmp, STAMP), "w") as f:
            json.dump({"key": key, "protos": list(PROTO_FILES), "protoc": protoc}, f)
        os.chmod(tmp, 0o755)
        old = None
        if os.path.exists(out_dir):
            old = tempfile.mkdtemp(prefix=".stubs-old-", dir=parent)
            os.replace(out_dir, os.path.join(old, "stubs"))
        try:
            os.replace(tmp, out_dir)
        except OSError:
            # Another process put its stubs there at the same moment.
            if _stamp_key(out_dir) != key:
                raise
        if old:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return out_dir


def load(out_dir=None):
    """Imports the stubs (generating them when needed) and returns them as
    dra_pb2, dra_grpc (DRA v1), dra_v1beta1_grpc (its service, over v1's
    messages), reg_pb2, reg_grpc."""
    out_dir = out_dir or stubs_dir()
    root = proto_root()
    if proto_key(root) is not None:
        generate(out_dir, root)
    elif _stamp_key(out_dir) is None:
        raise StubsError(f"no stubs in {out_dir} and no .proto files under {root}")
    if out_dir not in sys.path:
        sys.path.insert(0, out_dir)
    mods = {}
    for short, rel in (("dra", PROTO_FILES[0]), ("reg", PROTO_FILES[1]),
                       ("dra_v1beta1", PROTO_FILES[2])):
        package = _module_dir(rel).replace("/", ".")
        mods[short + "_pb2"] = importlib.import_module(package + ".api_pb2")
        mods[short + "_grpc"] = importlib.import_module(package + ".api_pb2_grpc")
    return SimpleNamespace(**mods)
