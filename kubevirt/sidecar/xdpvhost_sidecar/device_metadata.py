"""Reads a KEP-5304 device metadata file (kubevirt/INTERFACES.md, KEP-5304
device metadata): a JSON stream of the same DeviceMetadata object once per
API version; the first object of a version this reader knows is used, the
rest skipped."""

import json

from .binding_error import BindingError
from .vmi_interface import MAX_QUEUES, mac_address

API_VERSION = "metadata.resource.k8s.io/v1alpha1"
KIND = "DeviceMetadata"


def _objects(text):
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return
        obj, pos = decoder.raw_decode(text, pos)
        yield obj


def read_device_metadata(path):
    """The DeviceMetadata object in `path` (v1alpha1). Raises BindingError
    when the file is not a metadata stream or holds no known version;
    OSError (FileNotFoundError) when it cannot be read."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        objects = list(_objects(text))
    except json.JSONDecodeError as e:
        raise BindingError(f"device metadata {path}: not a JSON stream: {e}") from e
    for obj in objects:
        if isinstance(obj, dict) and obj.get("apiVersion") == API_VERSION \
                and obj.get("kind") == KIND:
            return obj
    versions = [o.get("apiVersion") for o in objects if isinstance(o, dict)]
    raise BindingError(f"device metadata {path}: no {KIND} of {API_VERSION} "
                       f"(found {versions or 'nothing'})")


def _attribute(device, key, kind):
    value = (device.get("attributes") or {}).get(key)
    if value is None:
        return None
    if not isinstance(value, dict) or kind not in value:
        raise BindingError(f"device {device.get('name')!r}: attribute {key} is {value!r}, "
                           f"expected {{{kind!r}: ...}}")
    return value[kind]


def vhost_user_attributes(metadata, request, driver, path):
    """(vhost-user-path, mtu, queues, mac) of the first device of `driver`
    in `request` that carries vhost-user-path. The first two are required,
    as the upstream vhostuser binding requires them; queues (the queue pairs
    the port offers, xdpvhost's own attribute) and mac (networkData.
    hardwareAddress: the one MAC the port lets the guest send from) are
    None when absent."""
    for req in metadata.get("requests") or []:
        name = req.get("name", "")
        if name != request and not name.startswith(request + "/"):
            continue
        for device in req.get("devices") or []:
            if device.get("driver") not in (None, driver):
                continue
            socket = _attribute(device, "vhost-user-path", "string")
            if socket is None:
                continue
            mtu = _attribute(device, "mtu", "int")
            if mtu is None:
                raise BindingError(f"device metadata {path}: request {request}: device "
                                   f"{device.get('name')!r} has vhost-user-path but no mtu")
            if not isinstance(mtu, int) or not 68 <= mtu <= 9702:
                raise BindingError(f"device metadata {path}: mtu {mtu!r} is outside 68..9702")
            if not isinstance(socket, str) or not socket.startswith("/"):
                raise BindingError(f"device metadata {path}: vhost-user-path {socket!r} "
                                   "is not an absolute path")
            queues = _attribute(device, "queues", "int")
            if queues is not None and (not isinstance(queues, int) or isinstance(queues, bool)
                                       or not 1 <= queues <= MAX_QUEUES):
                raise BindingError(f"device metadata {path}: queues {queues!r} is outside "
                                   f"1..{MAX_QUEUES}")
            network = device.get("networkData")
            if network is not None and not isinstance(network, dict):
                raise BindingError(f"device metadata {path}: networkData is not an object")
            mac = mac_address(f"device metadata {path}: networkData.hardwareAddress",
                              (network or {}).get("hardwareAddress"))
            return socket, mtu, queues, mac
    raise BindingError(f"device metadata {path}: no device of {driver} in request "
                       f"{request} carries vhost-user-path")
