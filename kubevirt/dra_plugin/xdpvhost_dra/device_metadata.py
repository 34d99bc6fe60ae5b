"""KEP-5304 device metadata (kubevirt/INTERFACES.md, KEP-5304 device
metadata): one file per claim request on the host under the plugin's data
directory, mounted into the pod by a CDI spec at the path KubeVirt and the
binding sidecar read. The content is a JSON stream of the document once per version served (here only
metadata.resource.k8s.io/v1alpha1), each followed by a newline."""

import json
import os

from . import DRIVER_NAME, atomic_file

API_VERSION = "metadata.resource.k8s.io/v1alpha1"
CONTAINER_ROOT = "/var/run/kubernetes.io/dra-device-attributes"


def host_dir(plugin_dir, namespace, claim_name):
    return os.path.join(plugin_dir, "dra-device-metadata", f"{namespace}_{claim_name}")


def host_file(plugin_dir, namespace, claim_name, request):
    return os.path.join(host_dir(plugin_dir, namespace, claim_name), request, "metadata.json")


def container_file(claim_name, pod_claim_name, from_template, request):
    """resourceclaimtemplates/<podClaimName>/... for a claim made from a
    template, resourceclaims/<claimName>/... for a named claim."""
    if from_template:
        middle = os.path.join("resourceclaimtemplates", pod_claim_name)
    else:
        middle = os.path.join("resourceclaims", claim_name)
    return os.path.join(CONTAINER_ROOT, middle, request, f"{DRIVER_NAME}-metadata.json")


def document(namespace, claim_name, claim_uid, pod_claim_name, from_template, request_full,
             devices):
    """devices: dicts {pool, name, attributes, networkData (optional)} of
    the request's devices."""
    doc = {
        "kind": "DeviceMetadata",
        "apiVersion": API_VERSION,
        "metadata": {"name": claim_name, "namespace": namespace, "uid": claim_uid, "generation": 1},
    }
    if from_template:
        doc["podClaimName"] = pod_claim_name
    doc["requests"] = [{"name": request_full, "devices": [
        {"driver": DRIVER_NAME, "pool": d["pool"], "name": d["name"], "attributes": d["attributes"],
         **({"networkData": d["networkData"]} if d.get("networkData") else {})}
        for d in devices]}]
    return doc


def write(path, doc):
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    data = (json.dumps(doc, indent=2) + "\n").encode()
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    except OSError:
        pass
    atomic_file.write_bytes(path, data, mode=0o644)
    return True


def owner_uid(path):
    """The claim UID of the file's first document; None if it has none."""
    try:
        with open(path) as f:
            doc, _ = json.JSONDecoder().raw_decode(f.read().lstrip())
        return doc["metadata"]["uid"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove(plugin_dir, namespace, claim_name, request, claim_uid):
    """Removes the request's file, unless a newer claim of the same name
    (another UID: the path is by name) wrote it since, and the directories
    left empty."""
    path = host_file(plugin_dir, namespace, claim_name, request)
    owner = owner_uid(path)
    if owner is not None and owner != claim_uid:
        return False
    removed = atomic_file.remove(path)
    for d in (os.path.dirname(path), host_dir(plugin_dir, namespace, claim_name)):
        try:
            os.rmdir(d)
        except OSError:
            break
    return removed
