"""Rewrites a libvirt domain XML as the upstream vhostuser binding does
(kubevirt/INTERFACES.md, Domain XML rewrite): one
<interface type="vhostuser"> per bound VMI interface with QEMU as the
socket's server, its MTU as QEMU's host_mtu, and shared guest memory (the
backend maps it). Guest
memory with neither hugepages nor a source gets <source type="memfd"/>:
libvirt would otherwise back it with a shared file in its state directory,
which xdpvhostd refuses to map (a file the frontend could truncate under
the mapping), and the VM would run with its link up and no traffic.
Everything else in the document is left as it came."""

import re
from xml.dom import minidom
from xml.parsers.expat import ExpatError

from .binding_error import BindingError
from .vmi_interface import QUEUE_SIZE

# Elements libvirtxml writes before <interface> inside <devices>; a new
# interface goes after the last interface, or else after the last of these.
_BEFORE_INTERFACES = ("emulator", "disk", "controller", "lease", "filesystem")
# Domain children libvirtxml writes before <memoryBacking>.
_BEFORE_MEMORY_BACKING = ("name", "uuid", "genid", "title", "description", "metadata",
                          "maxMemory", "memory", "currentMemory", "blkiotune", "memtune")


def _children(node, tag):
    return [c for c in node.childNodes if c.nodeType == c.ELEMENT_NODE and c.tagName == tag]


def _child(node, tag):
    found = _children(node, tag)
    return found[0] if found else None


def _element(doc, tag, **attrs):
    e = doc.createElement(tag)
    for k, v in attrs.items():
        e.setAttribute(k, str(v))
    return e


def _insert_after_last(parent, new, tags):
    """Insert `new` after the last child of `parent` named one of `tags`, or
    first when there is none."""
    anchor = None
    for c in parent.childNodes:
        if c.nodeType == c.ELEMENT_NODE and c.tagName in tags:
            anchor = c
    if anchor is None:
        parent.insertBefore(new, parent.firstChild)
    else:
        parent.insertBefore(new, anchor.nextSibling)


def _interface(doc, iface, endpoint):
    e = _element(doc, "interface", type="vhostuser")
    if iface.mac:
        e.appendChild(_element(doc, "mac", address=iface.mac))
    e.appendChild(_element(doc, "source", type="unix", mode="server", path=endpoint.path))
    e.appendChild(_element(doc, "model", type=iface.model))
    e.appendChild(_element(doc, "driver", queues=iface.queues, rx_queue_size=QUEUE_SIZE,
                           tx_queue_size=QUEUE_SIZE))
    # No <mtu>: libvirt applies it to the interface's host netdev, which a
    # vhostuser interface has only behind Open vSwitch ("Cannot set interface
    # MTU on '(null)'", at start and hot-plug); the MTU reaches the guest as
    # QEMU's host_mtu instead (_host_mtu).
    if iface.acpi_index:
        e.appendChild(_element(doc, "acpi", index=iface.acpi_index))
    e.appendChild(_element(doc, "alias", name=iface.alias))
    if iface.pci_address:
        e.appendChild(_pci_address(doc, iface))
    return e


# [DDDD:]BB:SS.F, as KubeVirt writes pciAddress; slot 0..0x1f, function 0..7.
_PCI = re.compile(r"^(?:([0-9A-Fa-f]{4}):)?([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])$")


def _pci_address(doc, iface):
    text = iface.pci_address
    m = _PCI.match(text)
    if not m or int(m.group(3), 16) > 0x1F:
        raise BindingError(f"interface {iface.name}: pciAddress {text[:40]!r} is not "
                           "[DDDD:]BB:SS.F (slot at most 1f, function at most 7)")
    domain, bus, slot, function = (int(g or "0", 16) for g in m.groups())
    return _element(doc, "address", type="pci", domain=f"0x{domain:04x}",
                    bus=f"0x{bus:02x}", slot=f"0x{slot:02x}", function=f"0x{function:x}")


def _alias_of(interface):
    alias = _child(interface, "alias")
    return alias.getAttribute("name") if alias is not None else None


# <memoryBacking> children libvirt's schema puts before <source>.
_BEFORE_MEMORY_SOURCE = ("hugepages", "nosharepages", "locked")


def _share_memory(doc, domain):
    """Shared guest memory, from memfd unless hugepages or a source say
    otherwise; returns the source it set ("memfd") or None."""
    backing = _child(domain, "memoryBacking")
    if backing is None:
        backing = doc.createElement("memoryBacking")
        _insert_after_last(domain, backing, _BEFORE_MEMORY_BACKING)
    added = None
    if _child(backing, "hugepages") is None and _child(backing, "source") is None:
        source = _element(doc, "source", type="memfd")
        if any(_children(backing, t) for t in _BEFORE_MEMORY_SOURCE):
            _insert_after_last(backing, source, _BEFORE_MEMORY_SOURCE)
        else:
            backing.insertBefore(source, backing.firstChild)
        added = "memfd"
    access = _child(backing, "access")
    if access is None:
        access = doc.createElement("access")
        _insert_after_last(backing, access, _BEFORE_MEMORY_SOURCE + ("source",))
    access.setAttribute("mode", "shared")
    return added


QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"


def _host_mtu(doc, domain, bound):
    """The MTU of each interface as its virtio-net device's host_mtu (QEMU
    offers VIRTIO_NET_F_MTU with it, and the guest takes it), through
    libvirt's <qemu:override> of the device (libvirt 8.2 and later). It
    applies when the domain starts: an interface hot-plugged later gets no
    host_mtu, and its guest uses 1500 until told otherwise."""
    if not domain.getAttribute("xmlns:qemu"):
        domain.setAttribute("xmlns:qemu", QEMU_NS)
    override = next((c for c in domain.childNodes if c.nodeType == c.ELEMENT_NODE
                     and c.namespaceURI == QEMU_NS and c.localName == "override"), None)
    if override is None:
        override = doc.createElementNS(QEMU_NS, "qemu:override")
        domain.appendChild(override)
    for iface, endpoint in bound:
        for old in [c for c in override.childNodes if c.nodeType == c.ELEMENT_NODE
                    and c.localName == "device" and c.getAttribute("alias") == iface.alias]:
            override.removeChild(old)
        device = doc.createElementNS(QEMU_NS, "qemu:device")
        device.setAttribute("alias", iface.alias)
        frontend = doc.createElementNS(QEMU_NS, "qemu:frontend")
        prop = doc.createElementNS(QEMU_NS, "qemu:property")
        for k, v in (("name", "host_mtu"), ("type", "unsigned"), ("value", str(endpoint.mtu))):
            prop.setAttribute(k, v)
        frontend.appendChild(prop)
        device.appendChild(frontend)
        override.appendChild(device)


def rewrite(domain_xml, bound):
    """`bound`: (VmiInterface, VhostUserEndpoint) pairs. Returns the new
    domain XML (bytes) and the memory source it set (None: it kept the
    domain's). With nothing bound the domain is returned as it came."""
    if not bound:
        return domain_xml, None
    try:
        doc = minidom.parseString(domain_xml)
    except ExpatError as e:
        raise BindingError(f"domain XML does not parse: {e}") from e
    domain = doc.documentElement
    if domain.tagName != "domain":
        raise BindingError(f"domain XML has root <{domain.tagName}>, not <domain>")
    devices = _child(domain, "devices")
    if devices is None:
        devices = doc.createElement("devices")
        domain.appendChild(devices)
    for iface, endpoint in bound:
        new = _interface(doc, iface, endpoint)
        existing = [i for i in _children(devices, "interface") if _alias_of(i) == iface.alias]
        if existing:
            devices.replaceChild(new, existing[0])
        elif _children(devices, "interface"):
            _insert_after_last(devices, new, ("interface",))
        else:
            _insert_after_last(devices, new, _BEFORE_INTERFACES)
    source = _share_memory(doc, domain)
    _host_mtu(doc, domain, bound)
    return domain.toxml().encode("utf-8"), source
