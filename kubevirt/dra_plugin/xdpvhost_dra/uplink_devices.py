"""The devices this node offers: one per uplink of the daemon (uplink.list),
with the MTU a port gets by default and the largest one the uplink's frame
size allows."""

import logging
import os
from dataclasses import dataclass

from . import names

# AF_XDP leaves 256 bytes of XDP headroom in a UMEM frame; a guest frame is
# MTU + 18 (Ethernet header and one VLAN tag). docs/operating.md "AF_XDP frame room".
XDP_HEADROOM = 256
FRAME_OVERHEAD = 18
MIN_MTU = 68

log = logging.getLogger("xdpvhost-dra.devices")


@dataclass(frozen=True)
class UplinkDevice:
    device: str      # ResourceSlice device name (DNS label)
    uplink: str      # the daemon's uplink name
    interface: str   # its host interface
    mtu: int         # default MTU of a port on it
    max_mtu: int     # largest MTU a port on it may have
    link: str = "up"  # its interface's state: up, down or absent


def max_mtu(frame_size):
    return frame_size - XDP_HEADROOM - FRAME_OVERHEAD


def interface_mtu(interface, sysfs="/sys/class/net"):
    """The interface's MTU as this network namespace sees it, or None."""
    if not interface or "/" in interface or interface in (".", ".."):
        return None
    try:
        with open(os.path.join(sysfs, interface, "mtu")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def from_uplinks(uplinks, default_mtu, warned=None):
    """UplinkDevice per uplink.list entry. The MTU is the interface's
    (read from sysfs: the plugin shares the node's network namespace with
    the daemon) capped at what the frame size allows; default_mtu when the
    interface is not visible here. `warned` (a set) keeps the log to one line
    per interface."""
    devices = []
    for u in uplinks:
        name = u.get("name")
        try:
            names.daemon_name("uplink name", name)
        except names.InvalidName as e:
            log.warning("skipping an uplink the daemon listed: %s", e)
            continue
        frame_size = u.get("frame_size") if isinstance(u.get("frame_size"), int) else 2048
        top = max_mtu(frame_size)
        interface = u.get("interface") if isinstance(u.get("interface"), str) else ""
        mtu = interface_mtu(interface)
        if mtu is None:
            mtu = default_mtu
            if warned is None or interface not in warned:
                log.info("uplink %s: interface %r not visible in this network namespace; "
                         "default MTU %d", name, interface, default_mtu)
                if warned is not None:
                    warned.add(interface)
        link = u.get("link") if u.get("link") in ("up", "down", "absent") else "up"
        devices.append(UplinkDevice(device=names.device_name(name), uplink=name,
                                    interface=interface, mtu=max(MIN_MTU, min(mtu, top)),
                                    max_mtu=top, link=link))
    return devices


def by_device_name(devices, slots):
    """{ResourceSlice device name: UplinkDevice}: each uplink's shared device
    and its first `slots` port slots. A shared device's name that is also
    another uplink's slot name (an uplink named like "up0-s1") means the
    uplink of that name."""
    out = {names.slot_device_name(d.uplink, i): d for d in devices for i in range(slots)}
    out.update({d.device: d for d in devices})
    return out
