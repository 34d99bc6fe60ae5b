"""The node's ResourceSlice (kubevirt/INTERFACES.md, ResourceSlice): one
pool named after the node, one slice, one shareable device per uplink, kept
up to date in the API server (created, replaced with a new pool generation
when the devices change, extra slices of this node and driver deleted).

A stored slice is in sync when its devices are these as the API server
stores them: quantities in canonical form, empty fields and the taints'
timeAdded aside, and without the fields of feature gates the server has off
(it drops them, and writing them again would change nothing); the fields it
does not keep are reported once, with their gate."""

import logging
import re
from decimal import Decimal

from . import DRIVER_NAME

log = logging.getLogger("xdpvhost-dra.slice")


# The taint of a device whose uplink is down or gone: no new claim is
# allocated it (NoSchedule); VMs already on it keep their ports and get
# their link back with the uplink's.
LINK_TAINT = DRIVER_NAME + "/uplink-down"


def device_entry(dev, ports_capacity):
    q = DRIVER_NAME + "/"
    entry = {
        "name": dev.device,
        "allowMultipleAllocations": True,
        "attributes": {
            q + "uplink": {"string": dev.uplink},
            q + "interface": {"string": dev.interface},
            q + "mtu": {"int": dev.mtu},
            q + "maxMtu": {"int": dev.max_mtu},
        },
        "capacity": {
            q + "ports": {
                "value": str(ports_capacity),
                "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "1"}},
            },
        },
    }
    if dev.link != "up":
        entry["taints"] = [{"key": LINK_TAINT, "value": dev.link, "effect": "NoSchedule"}]
    return entry


def slice_spec(node, devices, ports_capacity, generation):
    return {
        "driver": DRIVER_NAME,
        "nodeName": node,
        "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
        "devices": [device_entry(d, ports_capacity) for d in devices],
    }


# The device fields the API server drops when a feature gate is off, and
# that gate (named for the operator): both are off by default in Kubernetes
# 1.34 and 1.35. "capacity.X": field X of every capacity entry.
_GATED = (("allowMultipleAllocations", "DRAConsumableCapacity"),
          ("capacity.requestPolicy", "DRAConsumableCapacity"),
          ("taints", "DRADeviceTaints"))
# What a node loses while the gate is off.
_GATE_COST = {"DRAConsumableCapacity": "each uplink takes one claim at a time",
              "DRADeviceTaints": "a down uplink's device is not marked unusable"}

def _quantity(text):
    """A Quantity's value, to compare as the API server does (by value: it
    stores "1000" as "1k"); the text itself if it does not parse."""
    m = _QUANTITY.match(str(text).strip())
    if not m:
        return str(text)
    number, suffix = m.group(1), m.group(2) or ""
    if suffix.startswith(("e", "E")):
        return Decimal(number) * Decimal(10) ** int(suffix[1:])
    if suffix.endswith("i"):
        return Decimal(number) * Decimal(1024) ** _BINARY_POWERS[suffix]
    return Decimal(number) * Decimal(10) ** _DECIMAL_POWERS[suffix]


_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$")
_BINARY_POWERS = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_POWERS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def _pruned(value):
    """`value` without empty optional fields (None, {} and []), which the
    API server does not store."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def normal_devices(devices):
    """Devices as the driver owns them, compared as the API server stores
    them: quantities by value, empty optional fields left out."""
    out = []
    for d in _pruned(devices or []):
        d = dict(d)
        capacity = {}
        for name, c in (d.get("capacity") or {}).items():
            c = dict(c)
            if "value" in c:
                c["value"] = _quantity(c["value"])
            policy = dict(c.get("requestPolicy") or {})
            if policy:
                if "default" in policy:
                    policy["default"] = _quantity(policy["default"])
                if "validValues" in policy:
                    policy["validValues"] = [_quantity(v) for v in policy["validValues"]]
                if "validRange" in policy:
                    policy["validRange"] = {k: _quantity(v) for k, v in policy["validRange"].items()}
                c["requestPolicy"] = policy
            capacity[name] = c
        if capacity:
            d["capacity"] = capacity
        if "taints" in d:  # the server stamps timeAdded; the driver never sets it
            d["taints"] = [{k: v for k, v in t.items() if k != "timeAdded"} for t in d["taints"]]
        out.append(d)
    return out


def _without_gated(devices):
    """`devices` (normal) as a server with every gate of _GATED off stores them."""
    device_fields = {f for f, _ in _GATED if "." not in f}
    capacity_fields = {f.split(".", 1)[1] for f, _ in _GATED if f.startswith("capacity.")}
    out = []
    for d in devices:
        d = {k: v for k, v in d.items() if k not in device_fields}
        if "capacity" in d:
            d["capacity"] = {n: {k: v for k, v in c.items() if k not in capacity_fields}
                             for n, c in d["capacity"].items()}
        out.append(d)
    return out


def dropped_fields(wanted, stored):
    """Fields of `wanted` (normal devices) that `stored` lacks, as
    "device.field" paths."""
    paths = []
    by_name = {d.get("name"): d for d in stored}

    def walk(want, got, path):
        for k, v in want.items():
            if k not in got:
                paths.append(f"{path}.{k}")
            elif isinstance(v, dict) and isinstance(got[k], dict):
                walk(v, got[k], f"{path}.{k}")
    for d in wanted:
        got = by_name.get(d.get("name"))
        if got is not None:
            walk(d, got, d.get("name"))
    return paths


def _gates_for(paths):
    gates = set()
    for p in paths:
        for field, gate in _GATED:
            last = field.rsplit(".", 1)[-1]
            if p.endswith("." + last) or f".{last}." in p:
                gates.add(gate)
    return sorted(gates)


def _ours(spec):
    """The parts of a slice's spec this plugin sets beside its devices,
    generation left out."""
    pool = spec.get("pool") or {}
    return (spec.get("driver"), spec.get("nodeName"), pool.get("name"), pool.get("resourceSliceCount"))


class SlicePublisher:
    def __init__(self, api, node, ports_capacity):
        self.api = api
        self.node = node
        self.ports_capacity = ports_capacity
        self._node_uid = None
        # What the API server made of the devices last written: (wanted,
        # stored), both normal. A stored slice equal to that is in sync.
        self._accepted = None
        # Fields the API server does not keep ("device.field"), and the
        # feature gates that would keep them; reported once per change.
        self.dropped = []
        self.gates = []

    def _owner(self):
        if self._node_uid is None:
            try:
                self._node_uid = self.api.node_uid(self.node)
            except Exception as e:
                log.warning("node %s: %s; the ResourceSlice gets no owner reference", self.node, e)
                return None
        return {"apiVersion": "v1", "kind": "Node", "name": self.node, "uid": self._node_uid,
                "controller": True}

    def _stored(self, name, wanted, stored):
        """Takes note of what the API server keeps of `wanted` (normal
        devices) in slice `name`: fields it dropped are reported once, with
        the feature gate that keeps them."""
        self._accepted = (wanted, stored)
        dropped = dropped_fields(wanted, stored)
        if dropped == self.dropped:
            return
        self.dropped, self.gates = dropped, _gates_for(dropped)
        if dropped:
            costs = "; ".join(_GATE_COST[g] for g in self.gates)
            log.warning("the API server does not keep %s of ResourceSlice %s (feature gate%s %s off: "
                        "the default before Kubernetes 1.36)%s", ", ".join(dropped), name,
                        "s" if len(self.gates) > 1 else "", ", ".join(self.gates) or "unknown",
                        f": {costs}" if costs else "")
        else:
            log.info("the API server keeps every field of ResourceSlice %s", name)

    def _in_sync(self, wanted, stored):
        if stored == wanted:
            return True
        if self._accepted is not None and self._accepted == (wanted, stored):
            return True  # what the server made of exactly these devices
        # What a server with the gates of _GATED off keeps of them (a
        # restarted plugin has not written them yet).
        return stored == _without_gated(wanted)

    def publish(self, devices):
        """Makes the API server hold exactly one slice of this node with these
        devices. Returns what it did: "created", "updated" or "unchanged"."""
        existing = sorted(self.api.list_slices(self.node, DRIVER_NAME),
                          key=lambda s: s.get("metadata", {}).get("creationTimestamp") or "")
        for extra in existing[1:]:
            name = extra["metadata"]["name"]
            log.info("deleting ResourceSlice %s: a second slice of node %s", name, self.node)
            self.api.delete_slice(name)
        if not existing:
            spec = slice_spec(self.node, devices, self.ports_capacity, 1)
            body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"generateName": f"{self.node}-{DRIVER_NAME}-"}, "spec": spec}
            owner = self._owner()
            if owner:
                body["metadata"]["ownerReferences"] = [owner]
            made = self.api.create_slice(body)
            name = made.get("metadata", {}).get("name")
            log.info("published ResourceSlice %s: devices %s", name,
                     ", ".join(d.device for d in devices) or "none")
            self._stored(name, normal_devices(spec["devices"]),
                         normal_devices((made.get("spec") or {}).get("devices")))
            return "created"
        current = existing[0]
        name = current["metadata"]["name"]
        spec = current.get("spec") or {}
        generation = (spec.get("pool") or {}).get("generation") or 0
        wanted_spec = slice_spec(self.node, devices, self.ports_capacity, generation)
        wanted, stored = normal_devices(wanted_spec["devices"]), normal_devices(spec.get("devices"))
        if _ours(spec) == _ours(wanted_spec) and self._in_sync(wanted, stored):
            if self._accepted is None or self._accepted[0] != wanted:
                self._stored(name, wanted, stored)
            return "unchanged"
        body = dict(current)
        body["apiVersion"], body["kind"] = "resource.k8s.io/v1", "ResourceSlice"  # not in list items
        body["spec"] = slice_spec(self.node, devices, self.ports_capacity, generation + 1)
        replaced = self.api.replace_slice(name, body)
        log.info("updated ResourceSlice %s (pool generation %d): devices %s", name, generation + 1,
                 ", ".join(d.device for d in devices) or "none")
        self._stored(name, wanted, normal_devices((replaced.get("spec") or {}).get("devices")))
        return "updated"
