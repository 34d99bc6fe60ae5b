"""The interfaces of a VirtualMachineInstance (JSON, as virt-launcher sends
it) that use this binding, with what the domain needs of each
(CONTRACT.md §9, §10)."""

from dataclasses import dataclass
from typing import Optional

from .binding_error import BindingError

QUEUE_SIZE = 1024  # rx_queue_size = tx_queue_size, as upstream's QueueSize
MAX_QUEUES = 256   # upstream's MaxQueueNum


@dataclass(frozen=True)
class ClaimRef:
    """Where a DRA network's device comes from.

    `pod_claim_name` is the name in vmi.spec.resourceClaims[] (and so in the
    pod's spec.resourceClaims[]); `claim_name` is the ResourceClaim object's
    name for a claim the VM names directly, None for a template claim."""

    pod_claim_name: str
    request: str
    claim_name: Optional[str]

    @property
    def from_template(self):
        return self.claim_name is None


@dataclass(frozen=True)
class VmiInterface:
    name: str
    claim: ClaimRef
    model: str            # virtio or virtio-transitional
    queues: int
    mac: Optional[str]
    acpi_index: Optional[int]
    pci_address: Optional[str]

    @property
    def alias(self):
        return f"ua-{self.name}"


def _queue_count(spec):
    devices = spec.get("domain", {}).get("devices", {})
    if not devices.get("networkInterfaceMultiqueue"):
        return 1
    cpu = spec.get("domain", {}).get("cpu") or {}
    count = 1
    for key in ("cores", "sockets", "threads"):
        count *= max(int(cpu.get(key) or 0), 1)
    return min(count, MAX_QUEUES)


def bound_interfaces(vmi, binding_name):
    """Every interface of `vmi` whose binding.name is `binding_name`, in the
    VMI's order. Raises BindingError for one that cannot be served."""
    spec = vmi.get("spec") or {}
    devices = spec.get("domain", {}).get("devices", {})
    networks = {n.get("name"): n for n in spec.get("networks") or []}
    claims = {c.get("name"): c for c in spec.get("resourceClaims") or []}
    transitional = bool(devices.get("useVirtioTransitional"))
    queues = _queue_count(spec)
    found = []
    for iface in devices.get("interfaces") or []:
        if (iface.get("binding") or {}).get("name") != binding_name:
            continue
        name = iface.get("name", "")
        model = iface.get("model", "")
        if model not in ("", "virtio"):
            raise BindingError(f"interface {name}: model {model!r} is not supported "
                               "(a vhost-user interface is virtio)")
        network = networks.get(name)
        if network is None:
            raise BindingError(f"interface {name}: no network of that name in spec.networks")
        ref = network.get("resourceClaim")
        if not ref or not ref.get("claimName") or not ref.get("requestName"):
            raise BindingError(f"interface {name}: network {name} has no resourceClaim "
                               "with claimName and requestName (binding "
                               f"{binding_name} serves DRA networks only)")
        claim = claims.get(ref["claimName"])
        if claim is None:
            raise BindingError(f"interface {name}: claim {ref['claimName']!r} is not in "
                               "spec.resourceClaims")
        if claim.get("resourceClaimTemplateName"):
            claim_name = None
        elif claim.get("resourceClaimName"):
            claim_name = claim["resourceClaimName"]
        else:
            raise BindingError(f"interface {name}: spec.resourceClaims {ref['claimName']!r} "
                               "names neither resourceClaimName nor resourceClaimTemplateName")
        acpi = iface.get("acpiIndex")
        found.append(VmiInterface(
            name=name,
            claim=ClaimRef(pod_claim_name=ref["claimName"], request=ref["requestName"],
                           claim_name=claim_name),
            model="virtio-transitional" if transitional else "virtio",
            queues=queues,
            mac=iface.get("macAddress") or None,
            acpi_index=int(acpi) if acpi and int(acpi) > 0 else None,
            pci_address=iface.get("pciAddress") or None))
    return found
