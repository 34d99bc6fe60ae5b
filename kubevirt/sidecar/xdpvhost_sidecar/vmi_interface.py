"""The interfaces of a VirtualMachineInstance (JSON, as virt-launcher sends
it) that use this binding, with what the domain needs of each
(kubevirt/INTERFACES.md, KubeVirt configuration and VMI fields; Domain XML
rewrite).

Every value taken from the VMI is checked before use: names by the DRA
plugin's own rules (xdpvhost_dra.names: they become paths), numbers and
MACs by type and range. What does not pass is a BindingError that names
the field, never an unhandled exception."""

from dataclasses import dataclass
from typing import Optional

from xdpvhost_dra import names, port_mac, vmi_queues

from .binding_error import BindingError

QUEUE_SIZE = 1024  # rx_queue_size = tx_queue_size, as upstream's QueueSize
MAX_QUEUES = vmi_queues.MAX_QUEUE_PAIRS


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


def _object(where, value):
    """`value` when it is a JSON object (absent: empty), else a BindingError."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BindingError(f"{where} is {type(value).__name__}, not an object")
    return value


def _list(where, value):
    if value is None:
        return []
    if not isinstance(value, list):
        raise BindingError(f"{where} is {type(value).__name__}, not a list")
    return [_object(f"{where}[{i}]", item) for i, item in enumerate(value)]


def _count(where, value):
    """A non-negative integer field (absent: 0). JSON numbers only, as the
    API server stores them: "4" or 4.5 or true is refused."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BindingError(f"{where} {value!r} is not a non-negative integer")
    return value


def _name(check, where, value):
    try:
        return check(where, value)
    except names.InvalidName as e:
        raise BindingError(str(e)) from e


def mac_address(where, value):
    """The MAC in the colon form libvirt writes, or None when absent; the
    DRA plugin's own rules (xdpvhost_dra.port_mac): six hex pairs, unicast,
    not all zero."""
    if value in (None, ""):
        return None
    try:
        return port_mac.normalise(where, value)
    except port_mac.MacError as e:
        raise BindingError(str(e)) from e


def _queue_count(spec):
    try:
        return vmi_queues.queue_pairs(spec)
    except ValueError as e:
        raise BindingError(str(e)) from e


def bound_interfaces(vmi, binding_name):
    """Every interface of `vmi` whose binding.name is `binding_name`, in the
    VMI's order. Raises BindingError for one that cannot be served."""
    spec = _object("spec", _object("the VMI", vmi).get("spec"))
    devices = _object("spec.domain.devices",
                      _object("spec.domain", spec.get("domain")).get("devices"))
    networks = {n.get("name"): n for n in _list("spec.networks", spec.get("networks"))}
    claims = {c.get("name"): c for c in _list("spec.resourceClaims", spec.get("resourceClaims"))}
    transitional = bool(devices.get("useVirtioTransitional"))
    queues = _queue_count(spec)
    found = []
    for iface in _list("spec.domain.devices.interfaces", devices.get("interfaces")):
        if _object("interface binding", iface.get("binding")).get("name") != binding_name:
            continue
        name = _name(names.interface_name, "interface name", iface.get("name"))
        model = iface.get("model", "")
        if model not in ("", "virtio"):
            raise BindingError(f"interface {name}: model {model!r} is not supported "
                               "(a vhost-user interface is virtio)")
        network = networks.get(name)
        if network is None:
            raise BindingError(f"interface {name}: no network of that name in spec.networks")
        ref = _object(f"network {name}: resourceClaim", network.get("resourceClaim"))
        if not ref.get("claimName") or not ref.get("requestName"):
            raise BindingError(f"interface {name}: network {name} has no resourceClaim "
                               "with claimName and requestName (binding "
                               f"{binding_name} serves DRA networks only)")
        # Both become directories of the socket's and the metadata's paths.
        pod_claim_name = _name(names.dns_label, f"interface {name}: resourceClaim.claimName",
                               ref["claimName"])
        request = _name(names.dns_label, f"interface {name}: resourceClaim.requestName",
                        ref["requestName"])
        claim = claims.get(pod_claim_name)
        if claim is None:
            raise BindingError(f"interface {name}: claim {pod_claim_name!r} is not in "
                               "spec.resourceClaims")
        where = f"spec.resourceClaims {pod_claim_name}"
        if claim.get("resourceClaimTemplateName"):
            _name(names.dns_subdomain, f"{where}: resourceClaimTemplateName",
                  claim["resourceClaimTemplateName"])
            claim_name = None
        elif claim.get("resourceClaimName"):
            claim_name = _name(names.dns_subdomain, f"{where}: resourceClaimName",
                               claim["resourceClaimName"])
        else:
            raise BindingError(f"interface {name}: {where} names neither resourceClaimName "
                               "nor resourceClaimTemplateName")
        acpi = _count(f"interface {name}: acpiIndex", iface.get("acpiIndex"))
        pci = iface.get("pciAddress")
        if pci is not None and not isinstance(pci, str):
            raise BindingError(f"interface {name}: pciAddress {pci!r} is not a string")
        found.append(VmiInterface(
            name=name,
            claim=ClaimRef(pod_claim_name=pod_claim_name, request=request,
                           claim_name=claim_name),
            model="virtio-transitional" if transitional else "virtio",
            queues=queues,
            mac=mac_address(f"interface {name}: macAddress", iface.get("macAddress")),
            acpi_index=acpi or None,
            pci_address=pci or None))
    return found
