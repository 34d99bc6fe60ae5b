"""API objects the stand-in serves (shaped as the API server returns them,
and checked against the resource.k8s.io/v1 schema before they are served),
and the checks of what the plugin sends: the OpenAPI schema made strict
(unknown fields rejected, as the API server does with fieldValidation=Strict)
plus the rules the schema states only in prose."""

import copy
import json
import os
import re
import uuid

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMAS = os.path.join(HERE, "..", "schemas")
DRIVER = "xdpvhost.io"

with open(os.path.join(SCHEMAS, "resource.k8s.io-v1.schema.json")) as f:
    RESOURCE_SCHEMA = json.load(f)


def _strict(node):
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for v in node.values():
            _strict(v)
    elif isinstance(node, list):
        for v in node:
            _strict(v)


def _strict_schema():
    s = copy.deepcopy(RESOURCE_SCHEMA)
    _strict(s["$defs"])  # not the root: it only dispatches on kind
    return s


STRICT = jsonschema.Draft202012Validator(_strict_schema())
LENIENT = jsonschema.Draft202012Validator(RESOURCE_SCHEMA)


def schema_errors(obj, strict=True):
    v = STRICT if strict else LENIENT
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(obj)]


def definition_errors(name, value):
    v = jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": _strict_schema()["$defs"]})
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(value)]


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_QUALIFIED = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z_][A-Za-z0-9_]{0,31}$")


def attribute_errors(name, value):
    """One DeviceAttribute: the schema, exactly one field, strings <= 64."""
    errors = [f"{name}: {e}" for e in definition_errors("io.k8s.api.resource.v1.DeviceAttribute", value)]
    if len(value) != 1:
        errors.append(f"{name}: exactly one of bool/int/string/version must be set, got {sorted(value)}")
    for k in ("string", "version"):
        if k in value and len(value[k]) > 64:
            errors.append(f"{name}: {k} longer than 64 characters")
    return errors


def slice_prose_errors(obj):
    """ResourceSlice rules in the schema's descriptions."""
    errors = []
    spec = obj["spec"]
    if sum(k in spec for k in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")) != 1:
        errors.append("spec: exactly one of nodeName/nodeSelector/allNodes/perDeviceNodeSelection")
    if len(spec.get("devices", [])) > 128:
        errors.append("spec.devices: more than 128")
    for d in spec.get("devices", []):
        if not _DNS_LABEL.match(d["name"]):
            errors.append(f"device {d['name']!r}: not a DNS label")
        if len(d.get("attributes", {})) + len(d.get("capacity", {})) > 32:
            errors.append(f"device {d['name']}: more than 32 attributes and capacities")
        for k, v in d.get("attributes", {}).items():
            if not _QUALIFIED.match(k):
                errors.append(f"device {d['name']}: attribute name {k!r} is not <domain>/<C identifier>")
            errors += attribute_errors(k, v)
        for k in d.get("capacity", {}):
            if not _QUALIFIED.match(k):
                errors.append(f"device {d['name']}: capacity name {k!r} is not <domain>/<C identifier>")
    return errors


class _Response:
    def __init__(self, obj):
        self.data = json.dumps(obj)


def event_errors(obj):
    """A core/v1 Event against the official python client's model of it
    (kubernetes.client.CoreV1Event, generated from the API's OpenAPI): no
    field the model lacks, at any depth; the required ones present;
    timestamps that parse; a type the API knows."""
    from kubernetes import client
    errors = []

    def known(value, model, path):
        cls = getattr(client, model)
        fields = {json_name: attr for attr, json_name in cls.attribute_map.items()}
        for k, v in value.items():
            if k not in fields:
                errors.append(f"{path}{k}: not a field of {model}")
                continue
            kind = cls.openapi_types[fields[k]]
            if hasattr(client, kind) and isinstance(v, dict):
                known(v, kind, f"{path}{k}.")
    known(obj, "CoreV1Event", "")
    try:
        client.ApiClient().deserialize(_Response(obj), "CoreV1Event")
    except Exception as e:  # ValueError (a required field), ApiException (a timestamp)
        errors.append(f"CoreV1Event: {e}")
    if obj.get("type") not in ("Normal", "Warning"):
        errors.append(f"type {obj.get('type')!r}: Normal or Warning")
    return errors


def node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": str(uuid.uuid4()), "labels": {"kubernetes.io/hostname": name}}}


def vmi(namespace, name, *, mac=None, interface="fast0", pod_claim_name="vhost", request="vhost-port",
        template="xdpvhost-port", multiqueue_cpu=None):
    """A VirtualMachineInstance as KubeVirt stores it (kubevirt/INTERFACES.md,
    KubeVirt configuration and VMI fields; the shape of
    tests/kubevirt/sidecar/vmi-vm1.json): one interface of the vhostuser
    binding on a DRA network, with macAddress when `mac` is given; with
    networkInterfaceMultiqueue and that spec.domain.cpu when
    `multiqueue_cpu` is given."""
    iface = {"name": interface, "binding": {"name": "vhostuser"}}
    if mac:
        iface["macAddress"] = mac
    devices = {"interfaces": [{"name": "default", "masquerade": {}}, iface]}
    if multiqueue_cpu is not None:
        devices["networkInterfaceMultiqueue"] = True
    return {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
            "metadata": {"name": name, "namespace": namespace, "uid": str(uuid.uuid4()),
                         "labels": {"kubevirt.io/vm": name}},
            "spec": {"domain": {"cpu": multiqueue_cpu or {"cores": 1},
                                "resources": {"requests": {"memory": "1Gi"}}, "devices": devices},
                     "networks": [{"name": "default", "pod": {}},
                                  {"name": interface, "resourceClaim": {"claimName": pod_claim_name,
                                                                        "requestName": request}}],
                     "resourceClaims": [{"name": pod_claim_name, "resourceClaimTemplateName": template}]},
            "status": {"phase": "Scheduled"}}


def launcher_pod(namespace, name, vm, vmi_obj=None):
    """virt-launcher's pod of VM `vm`, as the API server has it; owned by
    `vmi_obj` (controller reference, as virt-controller makes it) when
    given. The plugin never reads it (it may not): the tests use its name
    and UID for the claim's reservedFor, and run_on() records it on the VMI."""
    meta = {"name": name, "namespace": namespace, "uid": str(uuid.uuid4()),
            "generateName": f"virt-launcher-{vm}-",
            "labels": {"kubevirt.io": "virt-launcher", "vm.kubevirt.io/name": vm},
            "annotations": {"kubevirt.io/domain": vm}}
    if vmi_obj is not None:
        meta["labels"]["kubevirt.io/created-by"] = vmi_obj["metadata"]["uid"]
        meta["ownerReferences"] = [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
                                    "name": vmi_obj["metadata"]["name"], "uid": vmi_obj["metadata"]["uid"],
                                    "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "compute", "image": "registry.example/virt-launcher:v1"}]}}


def launcher_name(vm, suffix):
    """The name the API server gives a pod of generateName
    "virt-launcher-<vm>-": cut to 58 characters, then 5 random ones."""
    assert len(suffix) == 5
    return f"virt-launcher-{vm}-"[:58] + suffix


def run_on(vmi_obj, pod, node, running_since=None):
    """Records `pod` in the VMI's status as virt-controller does once the
    pod is scheduled to `node` (status.activePods: pod UID -> node); with
    `running_since` (RFC 3339), the VMI has run there since then (phase
    Running, as virt-handler sets it once the domain runs)."""
    status = vmi_obj.setdefault("status", {})
    status.setdefault("activePods", {})[pod["metadata"]["uid"]] = node
    status["nodeName"] = node
    if running_since:
        status["phase"] = "Running"
        status["phaseTransitionTimestamps"] = [{"phase": "Running", "phaseTransitionTimestamp": running_since}]
    return vmi_obj


def claim(namespace, name, *, node_name, device="up0", request="vhost-port", pod=None,
          pod_claim_name="vhost", allocated=True, config=None, results=None, uid=None):
    """A ResourceClaim generated from a template (annotation pod-claim-name),
    allocated and reserved for pod (a launcher_pod() object) as the scheduler
    leaves it (kubevirt/INTERFACES.md, ResourceClaim)."""
    meta = {"name": name, "namespace": namespace, "uid": uid or str(uuid.uuid4())}
    if pod_claim_name:
        meta["annotations"] = {"resource.kubernetes.io/pod-claim-name": pod_claim_name}
    obj = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": meta,
           "spec": {"devices": {"requests": [{"name": request.split("/")[0],
                                              "exactly": {"deviceClassName": "xdpvhost"}}]}}}
    if allocated:
        if results is None:
            results = [{"request": request, "driver": DRIVER, "pool": node_name, "device": device,
                        "shareID": str(uuid.uuid4()), "consumedCapacity": {f"{DRIVER}/ports": "1"}}]
        devices = {"results": results}
        if config:
            devices["config"] = config
        obj["status"] = {"allocation": {"devices": devices, "nodeSelector": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}
        if pod:
            obj["status"]["reservedFor"] = [{"resource": "pods", "name": pod["metadata"]["name"],
                                             "uid": pod["metadata"]["uid"]}]
    errors = schema_errors(obj)
    assert not errors, f"test claim does not fit the API schema: {errors}"
    return obj


def ref(claim_obj):
    m = claim_obj["metadata"]
    return m["namespace"], m["name"], m["uid"]
