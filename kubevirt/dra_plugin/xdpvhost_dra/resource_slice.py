"""The node's ResourceSlice (kubevirt/INTERFACES.md, ResourceSlice): one
pool named after the node, one slice, kept up to date in the API server
(created, replaced with a new pool generation when the devices change,
extra slices of this node and driver deleted). Its devices, by the device
mode:

- shared: one device per uplink, allowMultipleAllocations with a `ports`
  capacity, so that many claims share it. The API server keeps those
  fields only with the feature gate DRAConsumableCapacity (on by default
  from Kubernetes 1.36).
- slots: `ports_per_uplink` devices per uplink, one port each, which every
  Kubernetes with resource.k8s.io/v1 allocates one claim at a time.
- auto (the default): shared where the API server keeps its fields, else
  slots. A dry-run create asks the server, at the first publish and every
  AUTO_RECHECK_S after, so that enabling the gate later is taken up.

A stored slice is in sync when its devices are these as the API server
stores them: quantities in canonical form, empty fields and the taints'
timeAdded aside, and without the fields of feature gates the server has off
(it drops them, and writing them again would change nothing); the fields it
does not keep are reported once, with their gate: a log line and a Warning
Event on the Node."""

import logging
import re
import time
from decimal import Decimal

from . import DRIVER_NAME, names, plugin_metrics
from .uplink_devices import UplinkDevice

log = logging.getLogger("xdpvhost-dra.slice")


# The taint of a device whose uplink is down or gone: no new claim is
# allocated it (NoSchedule); VMs already on it keep their ports and get
# their link back with the uplink's.
LINK_TAINT = DRIVER_NAME + "/uplink-down"

SHARED, SLOTS, AUTO = "shared", "slots", "auto"
DEVICE_MODES = (AUTO, SHARED, SLOTS)
# The devices a slice holds when any is tainted (ResourceSliceSpec.devices:
# 128, or 64 with taints): the slots of all uplinks together stay within it,
# so that a down uplink's taint never makes the slice invalid.
MAX_SLOTS = 64
AUTO_RECHECK_S = 600


def _attributes(dev):
    q = DRIVER_NAME + "/"
    return {
        q + "uplink": {"string": dev.uplink},
        q + "interface": {"string": dev.interface},
        q + "mtu": {"int": dev.mtu},
        q + "maxMtu": {"int": dev.max_mtu},
    }


def _with_taint(entry, dev):
    if dev.link != "up":
        entry["taints"] = [{"key": LINK_TAINT, "value": dev.link, "effect": "NoSchedule"}]
    return entry


def device_entry(dev, ports_capacity):
    """The shared device of an uplink."""
    return _with_taint({
        "name": dev.device,
        "allowMultipleAllocations": True,
        "attributes": _attributes(dev),
        "capacity": {
            DRIVER_NAME + "/ports": {
                "value": str(ports_capacity),
                "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "1"}},
            },
        },
    }, dev)


def slot_entry(dev, slot):
    """Port slot `slot` of an uplink: a device of its own, one claim at a time."""
    attributes = _attributes(dev)
    attributes[DRIVER_NAME + "/slot"] = {"int": slot}
    return _with_taint({"name": names.slot_device_name(dev.uplink, slot), "attributes": attributes}, dev)


def slots_per_uplink(ports_per_uplink, uplinks):
    """Slots each of `uplinks` uplinks gets: as asked, within MAX_SLOTS together."""
    return max(1, min(ports_per_uplink, MAX_SLOTS // max(1, uplinks)))


def slice_devices(devices, mode, ports_capacity, ports_per_uplink):
    if mode == SHARED:
        return [device_entry(d, ports_capacity) for d in devices]
    slots = slots_per_uplink(ports_per_uplink, len(devices))
    return [slot_entry(d, i) for d in devices for i in range(slots)]


def slice_spec(node, entries, generation):
    return {
        "driver": DRIVER_NAME,
        "nodeName": node,
        "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
        "devices": entries,
    }


# The device fields the API server drops when a feature gate is off, and
# that gate (named for the operator): both are off by default in Kubernetes
# 1.34 and 1.35. "capacity.X": field X of every capacity entry.
_GATED = (("allowMultipleAllocations", "DRAConsumableCapacity"),
          ("capacity.requestPolicy", "DRAConsumableCapacity"),
          ("taints", "DRADeviceTaints"))
# What a node loses while the gate is off.
_GATE_COST = {"DRAConsumableCapacity": "each uplink takes one claim at a time (--device-mode slots or "
                                       "auto gives each uplink --ports-per-uplink devices)",
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


def _gate_of(path):
    """The feature gate that keeps the field at `path` ("device.field"), or "unknown"."""
    for field, gate in _GATED:
        last = field.rsplit(".", 1)[-1]
        if path.endswith("." + last) or f".{last}." in path:
            return gate
    return "unknown"


def _gates_for(paths):
    return sorted({_gate_of(p) for p in paths} - {"unknown"})


def _ours(spec):
    """The parts of a slice's spec this plugin sets beside its devices,
    generation left out."""
    pool = spec.get("pool") or {}
    return (spec.get("driver"), spec.get("nodeName"), pool.get("name"), pool.get("resourceSliceCount"))


class SlicePublisher:
    def __init__(self, api, node, ports_capacity, mode=AUTO, ports_per_uplink=32,
                 clock=time.monotonic):
        """node: node_events.Node (its name, uid and Events)."""
        self.api = api
        self.node = node
        self.ports_capacity = ports_capacity
        self.ports_per_uplink = ports_per_uplink
        self.asked_mode = mode
        # The mode published: auto's choice once the server has been asked.
        self.mode = None if mode == AUTO else mode
        self._asked_at = None
        self._clock = clock
        self._capped = None  # the uplink count whose slots were last capped
        # What the API server made of the devices last written: (wanted,
        # stored), both normal. A stored slice equal to that is in sync.
        self._accepted = None
        # Fields the API server does not keep ("device.field"), and the
        # feature gates that would keep them; reported once per change.
        self.dropped = []
        self.gates = []

    def _owner(self):
        uid = self.node.uid()
        if uid is None:
            log.warning("node %s: uid unknown; the ResourceSlice gets no owner reference", self.node.name)
            return None
        return {"apiVersion": "v1", "kind": "Node", "name": self.node.name, "uid": uid, "controller": True}

    def _body(self, spec, name=None):
        meta = {"name": name} if name else {"generateName": f"{self.node.name}-{DRIVER_NAME}-"}
        return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": meta, "spec": spec}

    def _server_mode(self):
        """SHARED when the API server keeps a shared device's fields, else
        SLOTS: from a dry-run create of a slice with one such device."""
        probe = device_entry(UplinkDevice(device="probe", uplink="probe", interface="probe", mtu=1500,
                                          max_mtu=1500), 1)
        made = self.api.create_slice(self._body(slice_spec(self.node.name, [probe], 1)), dry_run=True)
        dropped = dropped_fields(normal_devices([probe]),
                                 normal_devices((made.get("spec") or {}).get("devices")))
        return SLOTS if any(p.endswith(".allowMultipleAllocations") for p in dropped) else SHARED

    def _current_mode(self, uplinks):
        if self.asked_mode == AUTO:
            now = self._clock()
            if self.mode is None or now - self._asked_at >= AUTO_RECHECK_S:
                mode = self._server_mode()
                self._asked_at = now
                if mode != self.mode:
                    self._report_mode(mode)
                self.mode = mode
        plugin_metrics.set_device_mode(self.mode, (SHARED, SLOTS))
        slots = slots_per_uplink(self.ports_per_uplink, uplinks)
        capped = self.mode == SLOTS and slots < self.ports_per_uplink
        if capped and self._capped != uplinks:
            log.warning("%d uplinks: %d port slots each, not --ports-per-uplink %d (the slice holds "
                        "%d port slots)", uplinks, slots, self.ports_per_uplink, MAX_SLOTS)
        self._capped = uplinks if capped else None
        return self.mode

    def _report_mode(self, mode):
        if mode == SHARED:
            log.info("device mode auto: the API server keeps allowMultipleAllocations; one shared device "
                     "per uplink, %d ports each", self.ports_capacity)
            if self.mode == SLOTS:
                self.node.event("Normal", "SharedDevices", "The API server now keeps "
                                "allowMultipleAllocations (feature gate DRAConsumableCapacity on): one "
                                f"shared device per uplink, {self.ports_capacity} ports each.")
            return
        message = ("The API server drops allowMultipleAllocations (feature gate DRAConsumableCapacity "
                   "off, the default before Kubernetes 1.36): each uplink is published as "
                   f"{self.ports_per_uplink} devices of one port each (--ports-per-uplink), so that "
                   "each VM on this node gets its own.")
        log.warning("device mode auto: %s", message)
        self.node.event("Warning", "PortSlotDevices", message)

    def _stored(self, name, wanted, stored):
        """Takes note of what the API server keeps of `wanted` (normal
        devices) in slice `name`: fields it dropped are reported once, with
        the feature gate that keeps them."""
        self._accepted = (wanted, stored)
        dropped = dropped_fields(wanted, stored)
        if dropped == self.dropped:
            return
        self.dropped, self.gates = dropped, _gates_for(dropped)
        plugin_metrics.set_dropped_fields(dropped, _gate_of)
        if dropped:
            costs = "; ".join(_GATE_COST[g] for g in self.gates)
            shown = ", ".join(dropped[:4]) + (f" and {len(dropped) - 4} more" if len(dropped) > 4 else "")
            message = (f"The API server does not keep {shown} of ResourceSlice {name} "
                       f"(feature gate{'s' if len(self.gates) > 1 else ''} "
                       f"{', '.join(self.gates) or 'unknown'} off: the default before Kubernetes "
                       f"1.36){': ' + costs if costs else ''}.")
            log.warning("%s", message)
            self.node.event("Warning", "ResourceSliceFieldsDropped", message)
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
        entries = slice_devices(devices, self._current_mode(len(devices)), self.ports_capacity,
                                self.ports_per_uplink)
        existing = sorted(self.api.list_slices(self.node.name, DRIVER_NAME),
                          key=lambda s: s.get("metadata", {}).get("creationTimestamp") or "")
        for extra in existing[1:]:
            name = extra["metadata"]["name"]
            log.info("deleting ResourceSlice %s: a second slice of node %s", name, self.node.name)
            self.api.delete_slice(name)
        if not existing:
            spec = slice_spec(self.node.name, entries, 1)
            body = self._body(spec)
            owner = self._owner()
            if owner:
                body["metadata"]["ownerReferences"] = [owner]
            made = self.api.create_slice(body)
            name = made.get("metadata", {}).get("name")
            log.info("published ResourceSlice %s: %s", name, _described(devices, self.mode, len(entries)))
            self._stored(name, normal_devices(entries),
                         normal_devices((made.get("spec") or {}).get("devices")))
            plugin_metrics.slice_writes.labels("created").inc()
            return "created"
        current = existing[0]
        name = current["metadata"]["name"]
        spec = current.get("spec") or {}
        generation = (spec.get("pool") or {}).get("generation") or 0
        wanted_spec = slice_spec(self.node.name, entries, generation)
        wanted, stored = normal_devices(entries), normal_devices(spec.get("devices"))
        if _ours(spec) == _ours(wanted_spec) and self._in_sync(wanted, stored):
            if self._accepted is None or self._accepted[0] != wanted:
                self._stored(name, wanted, stored)
            return "unchanged"
        body = dict(current)
        body["apiVersion"], body["kind"] = "resource.k8s.io/v1", "ResourceSlice"  # not in list items
        body["spec"] = slice_spec(self.node.name, entries, generation + 1)
        replaced = self.api.replace_slice(name, body)
        log.info("updated ResourceSlice %s (pool generation %d): %s", name, generation + 1,
                 _described(devices, self.mode, len(entries)))
        self._stored(name, wanted, normal_devices((replaced.get("spec") or {}).get("devices")))
        plugin_metrics.slice_writes.labels("updated").inc()
        return "updated"


def _described(devices, mode, entries):
    uplinks = ", ".join(d.device for d in devices) or "none"
    if mode == SHARED:
        return f"devices {uplinks} (shared)"
    return f"{entries} port slot devices of uplinks {uplinks}"
