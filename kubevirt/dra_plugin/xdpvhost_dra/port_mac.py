"""Each port's MAC comes from orchestration, never from the guest's first
frame: the port is added as mac_policy fixed with it, the device metadata
carries it (networkData.hardwareAddress), and the binding sidecar writes it
into the domain, so the guest's NIC has it from the start.

- The VMI interface's macAddress, where the VM sets one (a MAC pool such as
  kubemacpool's, or the user's choice).
- Otherwise one generated from who the port serves: the --mac-prefix
  octets, then the leading bytes of SHA-256 of namespace/VM/pod claim
  name/request. It is stable over restarts of the VM, and the same on a
  live migration's source and target pods, which prepare a claim each for
  the VM's one interface; a VM's MAC travels with it. Without a VM (a pod
  that is no virt-launcher) the claim's UID stands for it.

xdpvhostd refuses a MAC that another port has (mac_in_use), but for the
source and target ports of one VM, so a clash of two VMs on a node is a
prepare error, never a shared MAC."""

import hashlib
import re

from . import names

DEFAULT_PREFIX = "02"  # locally administered, unicast: 40 bits left to the hash
_MAC = re.compile(r"^[0-9A-Fa-f]{2}([:-])[0-9A-Fa-f]{2}(\1[0-9A-Fa-f]{2}){4}$")
_PREFIX = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){0,2}$")


class MacError(ValueError):
    pass


def parse_prefix(text):
    """--mac-prefix: one to three octets ("02", "0a:58"); the first must be
    a locally administered unicast octet (bit 1 set, bit 0 clear), so that
    no generated MAC is a vendor's or a group address."""
    if not isinstance(text, str) or not _PREFIX.match(text):
        raise MacError(f"MAC prefix {str(text)[:40]!r} is not one to three hex octets (e.g. 02 or 0a:58)")
    octets = bytes(int(o, 16) for o in text.split(":"))
    if octets[0] & 0x01 or not octets[0] & 0x02:
        raise MacError(f"MAC prefix {text}: the first octet must be locally administered and unicast "
                       "(x2, x6, xa or xe)")
    return octets


def normalise(where, text):
    """A MAC as KubeVirt takes it (':' or '-' between six hex pairs) in the
    lower-case colon form; a group or all-zero address is refused."""
    if not isinstance(text, str) or not _MAC.match(text):
        raise MacError(f"{where} {str(text)[:40]!r} is not a MAC address (six hex pairs, ':' or '-')")
    mac = text.replace("-", ":").lower()
    first = int(mac[:2], 16)
    if first & 0x01:
        raise MacError(f"{where} {mac} is a multicast address; a port needs a unicast MAC")
    if mac == "00:00:00:00:00:00":
        raise MacError(f"{where} {mac} is not a valid port MAC")
    return mac


def generated(prefix, namespace, vm, pod_claim_name, request, claim_uid):
    """The MAC of a port whose VM sets none (see the module's description)."""
    key = f"vm/{namespace}/{vm}/{pod_claim_name}/{request}" if vm else f"claim/{claim_uid}/{request}"
    digest = hashlib.sha256(key.encode()).digest()
    return ":".join(f"{b:02x}" for b in prefix + digest[:6 - len(prefix)])


def _items(value):
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def from_vmi(vmi, claim_name, pod_claim_name, from_template, request):
    """(interface name, macAddress or None) of the VMI interface whose
    network is this claim's request; None when no network of the VMI uses
    it. The VMI names the claim by its spec.resourceClaims[] entry: the pod
    claim name for a template claim, the entry whose resourceClaimName is
    the claim's name otherwise."""
    spec = vmi.get("spec") if isinstance(vmi, dict) else None
    spec = spec if isinstance(spec, dict) else {}
    claims = _items(spec.get("resourceClaims"))
    if from_template:
        entries = {c.get("name") for c in claims
                   if c.get("name") == pod_claim_name and c.get("resourceClaimTemplateName")}
    else:
        entries = {c.get("name") for c in claims if c.get("resourceClaimName") == claim_name}
    networks = [n.get("name") for n in _items(spec.get("networks"))
                if isinstance(n.get("resourceClaim"), dict)
                and n["resourceClaim"].get("claimName") in entries
                and n["resourceClaim"].get("requestName") == request]
    if not networks:
        return None
    domain = spec.get("domain") if isinstance(spec.get("domain"), dict) else {}
    devices = domain.get("devices") if isinstance(domain.get("devices"), dict) else {}
    for iface in _items(devices.get("interfaces")):
        if iface.get("name") == networks[0]:
            try:
                name = names.interface_name("VMI interface name", iface.get("name"))
            except names.InvalidName as e:
                raise MacError(str(e)) from e
            mac = iface.get("macAddress")
            if mac in (None, ""):
                return name, None
            return name, normalise(f"VMI interface {name}: macAddress", mac)
    return networks[0], None
