"""Where a bound interface's vhost-user socket is inside the VM's pod, its
MTU and its port's MAC: from the claim's device metadata file when the container runtime
mounted it into this container, otherwise from the DRA plugin's directory
convention and default MTU. Either way the origin is part of the answer so
that it can be logged; nothing is guessed silently."""

import os
from dataclasses import dataclass
from typing import Optional

from . import DEFAULT_MTU, DRIVER_NAME, SOCKET_FILE_NAME
from .binding_error import BindingError
from .device_metadata import read_device_metadata, vhost_user_attributes

SUN_PATH_MAX = 107  # sockaddr_un.sun_path holds 108 bytes with the NUL


@dataclass(frozen=True)
class VhostUserEndpoint:
    path: str
    mtu: int
    origin: str  # "device metadata <file>" or "convention ... (metadata <file> absent)"
    from_metadata: bool
    queues: Optional[int] = None  # the queue pairs the port offers, if the metadata says
    mac: Optional[str] = None     # the port's MAC (fixed), if the metadata says


def metadata_path(metadata_root, claim, driver=DRIVER_NAME):
    """The metadata file's path in the container (kubevirt/INTERFACES.md,
    Paths and names): by the pod's claim name for a template claim, by the
    ResourceClaim's name otherwise."""
    if claim.from_template:
        return os.path.join(metadata_root, "resourceclaimtemplates", claim.pod_claim_name,
                            claim.request, f"{driver}-metadata.json")
    return os.path.join(metadata_root, "resourceclaims", claim.claim_name, claim.request,
                        f"{driver}-metadata.json")


def convention_path(socket_root, claim):
    """The DRA plugin's socket path inside the pod:
    <socket root>/<podClaimName>/<request>/vhost.sock, where podClaimName is
    the pod's claim name (template claims) or the ResourceClaim's name."""
    pod_claim_name = claim.pod_claim_name if claim.from_template else claim.claim_name
    return os.path.join(socket_root, pod_claim_name, claim.request, SOCKET_FILE_NAME)


def resolve(claim, metadata_root, socket_root, default_mtu=DEFAULT_MTU, driver=DRIVER_NAME,
            default_queues=1):
    meta = metadata_path(metadata_root, claim, driver)
    try:
        metadata = read_device_metadata(meta)
    except FileNotFoundError:
        metadata = None
    except OSError as e:
        raise BindingError(f"device metadata {meta}: {e.strerror}") from e
    if metadata is not None:
        path, mtu, queues, mac = vhost_user_attributes(metadata, claim.request, driver, meta)
        endpoint = VhostUserEndpoint(path, mtu, f"device metadata {meta}", True, queues, mac)
    else:
        path = convention_path(socket_root, claim)
        # The port's queue pairs are not known: the claim's default, which a
        # VM asking for one pair per vCPU would otherwise exceed (QEMU then
        # waits for pairs the port never offers, and the VM never starts).
        endpoint = VhostUserEndpoint(
            path, default_mtu,
            f"the DRA plugin's convention <socket root {socket_root}>/<podClaimName>/"
            f"<request>/{SOCKET_FILE_NAME}, its default MTU {default_mtu} and default queues "
            f"{default_queues}, because the device metadata {meta} is not mounted in this "
            "container", False, default_queues)
    if len(path.encode()) > SUN_PATH_MAX:
        raise BindingError(f"vhost-user socket path {path} ({endpoint.origin}) is "
                           f"{len(path.encode())} bytes, longer than a unix socket path "
                           f"can be ({SUN_PATH_MAX})")
    return endpoint
