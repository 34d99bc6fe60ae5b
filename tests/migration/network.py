"""The network of the migration scenarios, all in namespaces of its own
(prefix mig-), nothing in the root namespace:

    mig-net   bridge br0: stands for the network between the nodes; ports
              n1p, n2p (one per node) and prp (the peer)
    mig-n1    node 1: veth up0 (its backend's uplink) <-> n1p
    mig-n2    node 2: veth up0 <-> n2p          (two-node scenarios only)
    mig-peer  the outside: veth pr0, 10.78.0.100/24 <-> prp

pr0 sends complete checksums (tx offload off; a veth would otherwise hand
the XDP uplinks CHECKSUM_PARTIAL frames) and verifies what it receives in
software (rx off). The bridge learns where each MAC is: `fdb_port(mac)`
says which port it learned the guest on."""

from __future__ import annotations

import re

from xvtest import netns

NET_NS, PEER_NS = "mig-net", "mig-peer"
BRIDGE = "br0"
PEER_IF, PEER_IP = "pr0", "10.78.0.100"
GUEST_IP = "10.78.0.2"
PREFIX = 24
UPLINK_IF = "up0"


def node_ns(n: int) -> str:
    return f"mig-n{n}"


def node_port(n: int) -> str:
    """The bridge port toward node n."""
    return f"n{n}p"


class Network:
    def __init__(self, nodes: int, register=lambda ns: None):
        self.nodes = nodes
        self.register = register

    def namespaces(self) -> list[str]:
        return [NET_NS, PEER_NS] + [node_ns(n) for n in range(1, self.nodes + 1)]

    def create(self):
        for ns in self.namespaces():
            self.register(ns)
            netns.create(ns)
        netns.run("ip", "-n", NET_NS, "link", "add", BRIDGE, "type", "bridge")
        netns.run("ip", "-n", NET_NS, "link", "set", BRIDGE, "up")
        for n in range(1, self.nodes + 1):
            netns.veth(node_ns(n), UPLINK_IF, NET_NS, node_port(n))
            netns.run("ip", "-n", NET_NS, "link", "set", node_port(n), "master", BRIDGE)
            netns.run_in(node_ns(n), "ethtool", "-K", UPLINK_IF, "tx", "off", check=False)
        netns.veth(PEER_NS, PEER_IF, NET_NS, "prp")
        netns.run("ip", "-n", NET_NS, "link", "set", "prp", "master", BRIDGE)
        netns.run("ip", "-n", PEER_NS, "addr", "add", f"{PEER_IP}/{PREFIX}", "dev", PEER_IF)
        netns.run_in(PEER_NS, "ethtool", "-K", PEER_IF, "tx", "off", "rx", "off")

    def delete(self):
        for ns in self.namespaces():
            netns.delete(ns)

    def fdb_port(self, mac: str) -> str | None:
        """The bridge port br0 learned `mac` on, or None."""
        out = netns.run("bridge", "-n", NET_NS, "fdb", "show", "br", BRIDGE, check=False).stdout
        for line in out.splitlines():
            m = re.match(rf"^{re.escape(mac.lower())} dev (\S+)", line.lower())
            if m and "permanent" not in line:
                return m.group(1)
        return None

    def in_peer(self, *cmd: str, check: bool = True, timeout: float = 30):
        return netns.run_in(PEER_NS, *cmd, check=check, timeout=timeout)
