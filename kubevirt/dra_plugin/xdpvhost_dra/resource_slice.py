"""The node's ResourceSlice (kubevirt/INTERFACES.md, ResourceSlice): one
pool named after the node, one slice, one shareable device per uplink, kept
up to date in the API server (created, replaced with a new pool generation
when the devices change, extra slices of this node and driver deleted)."""

import logging

from . import DRIVER_NAME

log = logging.getLogger("xdpvhost-dra.slice")


def device_entry(dev, ports_capacity):
    q = DRIVER_NAME + "/"
    return {
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


def slice_spec(node, devices, ports_capacity, generation):
    return {
        "driver": DRIVER_NAME,
        "nodeName": node,
        "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
        "devices": [device_entry(d, ports_capacity) for d in devices],
    }


def _ours(spec):
    """The parts of a slice's spec this plugin sets, generation left out."""
    pool = spec.get("pool") or {}
    return (spec.get("driver"), spec.get("nodeName"), pool.get("name"), pool.get("resourceSliceCount"),
            spec.get("devices") or [])


class SlicePublisher:
    def __init__(self, api, node, ports_capacity):
        self.api = api
        self.node = node
        self.ports_capacity = ports_capacity
        self._node_uid = None

    def _owner(self):
        if self._node_uid is None:
            try:
                self._node_uid = self.api.node_uid(self.node)
            except Exception as e:
                log.warning("node %s: %s; the ResourceSlice gets no owner reference", self.node, e)
                return None
        return {"apiVersion": "v1", "kind": "Node", "name": self.node, "uid": self._node_uid,
                "controller": True}

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
            body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                    "metadata": {"generateName": f"{self.node}-{DRIVER_NAME}-"},
                    "spec": slice_spec(self.node, devices, self.ports_capacity, 1)}
            owner = self._owner()
            if owner:
                body["metadata"]["ownerReferences"] = [owner]
            made = self.api.create_slice(body)
            log.info("published ResourceSlice %s: devices %s", made.get("metadata", {}).get("name"),
                     ", ".join(d.device for d in devices) or "none")
            return "created"
        current = existing[0]
        spec = current.get("spec") or {}
        generation = (spec.get("pool") or {}).get("generation") or 0
        wanted = slice_spec(self.node, devices, self.ports_capacity, generation)
        if _ours(spec) == _ours(wanted):
            return "unchanged"
        body = dict(current)
        body["spec"] = slice_spec(self.node, devices, self.ports_capacity, generation + 1)
        name = current["metadata"]["name"]
        self.api.replace_slice(name, body)
        log.info("updated ResourceSlice %s (pool generation %d): devices %s", name, generation + 1,
                 ", ".join(d.device for d in devices) or "none")
        return "updated"
