"""CDI spec files (kubevirt/INTERFACES.md, CDI spec files) in --cdi-root,
which the container runtime reads to apply a claim's container edits:

- one spec per claim, kind xdpvhost.io/vhost-user, cdiVersion 0.6.0: one
  device per prepared request that bind-mounts its socket directory into
  the pod (as dra-driver-ovsdpdk writes it);
- one spec per claim request, kind xdpvhost.io/metadata, cdiVersion 0.5.0:
  mounts the request's device metadata file read-only (as the Go kubelet
  plugin helper writes it).

Device names start with the claim UID (which may start with a digit: needs
cdiVersion >= 0.5.0) so that a runtime's CDI cache never serves a stale
entry of an earlier claim."""

import os

from . import DRIVER_NAME, atomic_file

VHOST_KIND = f"{DRIVER_NAME}/vhost-user"
METADATA_KIND = f"{DRIVER_NAME}/metadata"
VHOST_CDI_VERSION = "0.6.0"
METADATA_CDI_VERSION = "0.5.0"


def device_id(kind, name):
    return f"{kind}={name}"


def vhost_device_name(claim_uid, device, request):
    return f"{claim_uid}-{device}-{request}"


def vhost_spec_path(cdi_root, claim_uid):
    return os.path.join(cdi_root, f"{DRIVER_NAME}-vhost-user_{claim_uid}.json")


def vhost_spec(claim_uid, ports):
    """ports: (device, request, host_dir, container_dir) per prepared request."""
    return {
        "cdiVersion": VHOST_CDI_VERSION,
        "kind": VHOST_KIND,
        "devices": [{
            "name": vhost_device_name(claim_uid, device, request),
            "containerEdits": {"mounts": [{
                "hostPath": host_dir, "containerPath": container_dir, "options": ["bind", "rw"]}]},
        } for device, request, host_dir, container_dir in ports],
    }


def metadata_device_name(claim_uid, request):
    return f"{claim_uid}_{request}"


def metadata_spec_path(cdi_root, claim_uid, request):
    return os.path.join(cdi_root, f"{DRIVER_NAME}_metadata_{claim_uid}_{request}.json")


def metadata_spec(claim_uid, request, host_file, container_file):
    return {
        "cdiVersion": METADATA_CDI_VERSION,
        "kind": METADATA_KIND,
        "devices": [{
            "name": metadata_device_name(claim_uid, request),
            "containerEdits": {"mounts": [{
                "hostPath": host_file, "containerPath": container_file, "options": ["ro", "bind"]}]},
        }],
    }


def write(path, spec):
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    return atomic_file.write_json(path, spec, mode=0o644)
