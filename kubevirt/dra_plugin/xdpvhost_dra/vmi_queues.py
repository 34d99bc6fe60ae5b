"""How many queue pairs a VM's virtio-net interfaces have, as KubeVirt's
virt-launcher builds the domain: with
spec.domain.devices.networkInterfaceMultiqueue one per vCPU (sockets x
cores x threads of spec.domain.cpu, each at least 1), else one; at most
MAX_QUEUE_PAIRS (virt-launcher's MaxQueueNum). The DRA plugin gives a
claim's port as many by default, and the binding sidecar writes as many
into the domain (no more than the port has), so the two agree. Standard
library only: the sidecar's image carries this module."""

MAX_QUEUE_PAIRS = 256


def _object(where, value):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{where} is {type(value).__name__}, not an object")
    return value


def _count(where, value):
    """A non-negative JSON integer (absent: 0): "4", 4.5 and true are refused."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{where} {value!r} is not a non-negative integer")
    return value


def queue_pairs(vmi_spec):
    """The queue pairs of the VM's interfaces, from the VMI's spec;
    ValueError naming the field for a malformed one."""
    domain = _object("spec.domain", _object("spec", vmi_spec).get("domain"))
    devices = _object("spec.domain.devices", domain.get("devices"))
    if not devices.get("networkInterfaceMultiqueue"):
        return 1
    cpu = _object("spec.domain.cpu", domain.get("cpu"))
    count = 1
    for key in ("cores", "sockets", "threads"):
        count *= max(_count(f"spec.domain.cpu.{key}", cpu.get(key)), 1)
    return min(count, MAX_QUEUE_PAIRS)
