"""From an allocated ResourceClaim (as the API server returns it) to what
prepare makes on this node: one vhost-user port per request allocated from
this driver, with its socket directory, paths inside the pod, MTU and queue
pairs. Everything read from the claim is checked before use; a problem is a
ClaimError whose message goes to the kubelet as that claim's error."""

import os

from . import DRIVER_NAME, cdi, device_metadata, names, socket_dir

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# Inside the pod a device metadata attribute string is at most 64 characters
# (resource.k8s.io DeviceAttribute), and the socket path must fit sun_path.
ATTRIBUTE_STRING_MAX = 64
MAX_QUEUES = 128  # proto/config.schema.json port.queues (vhost::Device::kMaxQueuePairs)


class ClaimError(RuntimeError):
    pass


def _get(obj, *keys):
    for k in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(k)
    return obj


def _opaque_parameters(config_entries, request, max_mtu):
    """Merges the opaque parameters of driver xdpvhost.io that apply to the
    request (class config first, then claim config, as the API lists them).
    Accepted: queues (1..MAX_QUEUES), mtu (68..maxMtu); apiVersion and kind are
    ignored; anything else is an error."""
    merged = {}
    for i, entry in enumerate(config_entries or []):
        opaque = _get(entry, "opaque")
        if not isinstance(opaque, dict) or opaque.get("driver") != DRIVER_NAME:
            continue
        requests = entry.get("requests") or []
        if requests and request not in requests and not any(r.split("/")[0] == request for r in requests):
            continue
        params = opaque.get("parameters")
        if params is None:
            continue
        if not isinstance(params, dict):
            raise ClaimError(f"allocation config[{i}]: opaque parameters of {DRIVER_NAME} must be an object")
        for key, value in params.items():
            if key in ("apiVersion", "kind"):
                continue
            if key == "queues":
                if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_QUEUES:
                    raise ClaimError(f"allocation config[{i}]: queues {value!r} is not an integer "
                                     f"from 1 to {MAX_QUEUES}")
            elif key == "mtu":
                if not isinstance(value, int) or isinstance(value, bool) or not 68 <= value <= max_mtu:
                    raise ClaimError(f"allocation config[{i}]: mtu {value!r} is not an integer "
                                     f"from 68 to {max_mtu} (the uplink's maxMtu)")
            else:
                raise ClaimError(f"allocation config[{i}]: unknown parameter {key!r} "
                                 "(known: queues, mtu)")
            merged[key] = value
    return merged


def plan(claim, ref, node, devices, sockets, container_root, plugin_dir, cdi_root):
    """claim: the ResourceClaim object; ref: (namespace, name, uid) the kubelet
    sent; devices: {device name: UplinkDevice} this node publishes. Returns
    the state record of the claim (phase not set)."""
    namespace, name, claim_uid = ref
    meta = _get(claim, "metadata") or {}
    if meta.get("uid") != claim_uid:
        raise ClaimError(f"claim {namespace}/{name} has UID {meta.get('uid')!r}, not {claim_uid!r}: "
                         "it got replaced")
    if meta.get("name") != name or meta.get("namespace") != namespace:
        raise ClaimError(f"the API server returned {meta.get('namespace')}/{meta.get('name')} "
                         f"for claim {namespace}/{name}")
    allocation = _get(claim, "status", "allocation")
    if not isinstance(allocation, dict):
        raise ClaimError(f"claim {namespace}/{name} is not allocated (no status.allocation)")
    pods = _reserving_pods(claim)
    if len(pods) > 1:
        # Both pods would get the one socket directory: the second QEMU binds
        # over the first's socket and takes its NIC (D1 refuses it likewise).
        raise ClaimError(f"claim {namespace}/{name} is reserved for {len(pods)} pods "
                         f"({', '.join(str(p.get('name')) for p in pods)}): a vhost-user port serves "
                         "one VM; give each VM its own claim (a ResourceClaimTemplate)")
    annotations = meta.get("annotations") or {}
    pod_claim_name = annotations.get(POD_CLAIM_ANNOTATION) if isinstance(annotations, dict) else None
    from_template = pod_claim_name is not None
    try:
        if from_template:
            names.dns_label(f"annotation {POD_CLAIM_ANNOTATION}", pod_claim_name)
        else:
            pod_claim_name = name
    except names.InvalidName as e:
        raise ClaimError(f"claim {namespace}/{name}: {e}") from e

    results = _get(allocation, "devices", "results") or []
    if not isinstance(results, list):
        raise ClaimError(f"claim {namespace}/{name}: status.allocation.devices.results is not a list")
    ports, seen = [], {}
    for i, r in enumerate(results):
        if not isinstance(r, dict) or r.get("driver") != DRIVER_NAME:
            continue
        where = f"claim {namespace}/{name}: allocation result {i}"
        try:
            request_full = r.get("request")
            request = names.request_name(f"{where}: request", request_full)
            pool = names.dns_subdomain(f"{where}: pool", r.get("pool"))
            device = names.dns_label(f"{where}: device", r.get("device"))
            share_id = r.get("shareID")
            if share_id is not None:
                names.uid(f"{where}: shareID", share_id)
        except names.InvalidName as e:
            raise ClaimError(str(e)) from e
        if pool != node:
            raise ClaimError(f"{where}: device {device} is from pool {pool}, but this node's pool is {node}")
        dev = devices.get(device)
        if dev is None:
            raise ClaimError(f"{where}: device {device} is not an uplink of this node's xdpvhostd "
                             f"(devices: {', '.join(sorted(devices)) or 'none'})")
        if request in seen:
            raise ClaimError(f"claim {namespace}/{name}: request {request} has more than one "
                             f"{DRIVER_NAME} device ({seen[request]}, {device}); one vhost-user port "
                             "per request is supported")
        seen[request] = device
        params = _opaque_parameters(allocation.get("devices", {}).get("config"), request, dev.max_mtu)
        key = names.claim_key(claim_uid, request)
        if len(key) > sockets.longest_key():
            raise ClaimError(f"--socket-root {sockets.root} is too long for <dir>/vhost.sock to fit sun_path")
        container_dir = os.path.join(container_root, pod_claim_name, request)
        container_socket = os.path.join(container_dir, socket_dir.SOCKET_FILE)
        limit = min(ATTRIBUTE_STRING_MAX, socket_dir.SUN_PATH_MAX)
        if len(container_socket.encode()) > limit:
            raise ClaimError(f"{where}: the socket path in the pod, {container_socket}, is longer than "
                             f"{limit} characters (a device attribute string's limit); use shorter "
                             "claim and request names")
        ports.append({
            "request": request, "request_full": request_full, "device": device, "pool": pool,
            "share_id": share_id, "uplink": dev.uplink,
            "mtu": params.get("mtu", dev.mtu), "queues": params.get("queues", 1),
            # "claim": its config says; "default": the VM's, where its VMI is read
            "queues_from": "claim" if "queues" in params else "default",
            "key": key, "port": names.port_name(key),
            "dir": sockets.path(key), "socket": sockets.socket(key),
            "container_dir": container_dir, "container_socket": container_socket,
            "metadata_file": device_metadata.host_file(plugin_dir, namespace, name, request),
            "metadata_container_file": device_metadata.container_file(name, pod_claim_name,
                                                                      from_template, request),
            "metadata_spec": cdi.metadata_spec_path(cdi_root, claim_uid, request),
        })
    return {
        "claim": {"namespace": namespace, "name": name, "uid": claim_uid},
        "pod_claim_name": pod_claim_name, "from_template": from_template,
        "vhost_spec": cdi.vhost_spec_path(cdi_root, claim_uid),
        "ports": ports,
    }


def _reserving_pods(claim):
    """The pod entries of status.reservedFor."""
    entries = _get(claim, "status", "reservedFor") or []
    if not isinstance(entries, list):
        return []
    return [e for e in entries
            if isinstance(e, dict) and e.get("resource") == "pods" and not e.get("apiGroup")]


def reserving_pod(claim):
    """(name, uid) of the pod in status.reservedFor, or None."""
    pods = _reserving_pods(claim)
    return (pods[0].get("name"), pods[0].get("uid")) if pods else None


def prepared_devices(record):
    """The kubelet's Device entries (as dicts) of a record."""
    uid = record["claim"]["uid"]
    return [{
        "request_names": [p["request"]], "pool_name": p["pool"], "device_name": p["device"],
        "cdi_device_ids": [
            cdi.device_id(cdi.VHOST_KIND, cdi.vhost_device_name(uid, p["device"], p["request"])),
            cdi.device_id(cdi.METADATA_KIND, cdi.metadata_device_name(uid, p["request"])),
        ]} for p in record["ports"]]
