"""The benchmark network: two namespaces and one veth pair, all named
xvb-*. The node namespace holds the uplink (the backend's interface); the
peer namespace is "outside" with an address, a static neighbour entry for
the guest and TX checksum offload off (so L4 checksums are complete in
every frame the guest sees). IPv6 is off on both ends so nothing but the
benchmark's own frames crosses the link."""

import json

from xvtest import netns  # tests/pylib, put on sys.path by run.py

NODE_NS = "xvb-node"
PEER_NS = "xvb-out"
UPLINK_IF = "xvb-up"
PEER_IF = "xvb-peer"
PEER_IP = "10.77.0.2"
GUEST_IP = "10.77.0.1"
PREFIX = 24
GUEST_MAC = "52:54:00:77:00:01"



def link_stats(links) -> dict:
    """Kernel counters (rx/tx packets, drops) of each (namespace, interface):
    {interface: {...} or None if it cannot be read}."""
    res = {}
    for ns, ifname in links:
        r = netns.run("ip", "-n", ns, "-j", "-s", "link", "show", ifname, check=False)
        try:
            s = json.loads(r.stdout)[0]["stats64"]
            res[ifname] = {"rx_packets": s["rx"]["packets"], "rx_dropped": s["rx"]["dropped"],
                           "tx_packets": s["tx"]["packets"], "tx_dropped": s["tx"]["dropped"]}
        except (ValueError, KeyError, IndexError):
            res[ifname] = None
    return res

class Topology:
    def __init__(self):
        self.peer_mac = None
        self.uplink_mac = None
        self.facts = {}

    @staticmethod
    def remove_stale():
        for ns in (NODE_NS, PEER_NS):
            netns.delete(ns)

    def create(self):
        netns.create(NODE_NS)  # IPv6 off, lo up
        netns.create(PEER_NS)
        netns.veth(NODE_NS, UPLINK_IF, PEER_NS, PEER_IF)
        netns.run("ip", "-n", PEER_NS, "addr", "add", f"{PEER_IP}/{PREFIX}", "dev", PEER_IF)
        netns.run("ip", "-n", PEER_NS, "neigh", "replace", GUEST_IP, "lladdr", GUEST_MAC, "dev",
                  PEER_IF, "nud", "permanent")
        r = netns.run_in(PEER_NS, "ethtool", "-K", PEER_IF, "tx", "off", check=False)
        self.facts["peer_tx_offload_off"] = r.returncode == 0
        self.peer_mac = self._mac(PEER_NS, PEER_IF)
        self.uplink_mac = self._mac(NODE_NS, UPLINK_IF)
        ch = netns.run_in(NODE_NS, "ethtool", "-l", UPLINK_IF, check=False).stdout
        self.facts["uplink_channels"] = " ".join(ch.split()[-8:]) if ch else None
        return self

    @staticmethod
    def _mac(ns, ifname):
        out = netns.run("ip", "-n", ns, "-j", "link", "show", ifname).stdout
        return json.loads(out)[0]["address"]

    def link_stats(self):
        """Kernel counters of both veth ends (rx/tx packets, drops)."""
        return link_stats(((NODE_NS, UPLINK_IF), (PEER_NS, PEER_IF)))

    @staticmethod
    def ethtool_stats():
        """veth's own counters (ethtool -S) of both ends: XDP packets,
        redirects, drops per queue; where a frame that never arrived died."""
        res = {}
        for ns, ifname in ((NODE_NS, UPLINK_IF), (PEER_NS, PEER_IF)):
            r = netns.run_in(ns, "ethtool", "-S", ifname, check=False)
            stats = {}
            for line in r.stdout.splitlines()[1:]:
                k, _, v = line.strip().partition(":")
                if v.strip().isdigit() and k != "peer_ifindex":
                    stats[k] = int(v)
            res[ifname] = stats
        return res

    def describe(self):
        return {"node_ns": NODE_NS, "peer_ns": PEER_NS, "uplink": UPLINK_IF, "peer": PEER_IF,
                "peer_ip": PEER_IP, "guest_ip": GUEST_IP, "guest_mac": GUEST_MAC,
                "peer_mac": self.peer_mac, "uplink_mac": self.uplink_mac, **self.facts}

    def destroy(self):
        self.remove_stale()
