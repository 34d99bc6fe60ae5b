"""The uplink topology of the e2e suite: two network namespaces joined by a
veth pair, nothing in the root namespace.

    xve2e-node: xdpvhostd runs here; veth "up0" is its uplink (AF_XDP, copy mode)
    xve2e-peer: veth "pr0", 10.77.1.100/24, iperf3 server, tcpdump, nstat

pr0 has TX and RX checksum offload off: it sends complete checksums, as a
real NIC delivers them, and its kernel verifies every checksum it receives
in software, so a bad one shows in TcpInCsumErrors / UdpInCsumErrors.
"""

from __future__ import annotations

import re

from e2e_context import Context, NETNS_PREFIX
from xvtest import netns

NODE_NS = NETNS_PREFIX + "node"
PEER_NS = NETNS_PREFIX + "peer"
UPLINK_IF = "up0"
PEER_IF = "pr0"
PEER_IP = "10.77.1.100"
PREFIX = 24


def in_peer(*cmd: str, check: bool = True, timeout: float = 30) -> str:
    return netns.run_in(PEER_NS, *cmd, check=check, timeout=timeout).stdout


class UplinkTopology:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def create(self):
        for ns in (NODE_NS, PEER_NS):
            self.ctx.register_netns(ns)
            netns.create(ns, ipv6=True)
        netns.veth(NODE_NS, UPLINK_IF, PEER_NS, PEER_IF)
        netns.run("ip", "-n", PEER_NS, "addr", "add", f"{PEER_IP}/{PREFIX}", "dev", PEER_IF)
        in_peer("ethtool", "-K", PEER_IF, "tx", "off", "rx", "off")

    def set_mtu(self, mtu: int):
        netns.run("ip", "-n", NODE_NS, "link", "set", UPLINK_IF, "mtu", str(mtu))
        netns.run("ip", "-n", PEER_NS, "link", "set", PEER_IF, "mtu", str(mtu))

    def nstat(self) -> dict[str, int]:
        """Absolute SNMP counters of the peer namespace (nstat -asz)."""
        out = in_peer("nstat", "-asz")
        counters = {}
        for line in out.splitlines():
            m = re.match(r"^(\w+)\s+(\d+)", line)
            if m:
                counters[m.group(1)] = int(m.group(2))
        return counters

    def neighbour(self, ip: str) -> str:
        return in_peer("ip", "neigh", "show", ip, "dev", PEER_IF, check=False).strip()

    def flush_neighbours(self):
        in_peer("ip", "neigh", "flush", "dev", PEER_IF, check=False)

    def ping_from_peer(self, ip: str, count: int = 10, size: int = 56) -> dict:
        out = in_peer("ping", "-c", str(count), "-i", "0.2", "-W", "2", "-s", str(size), ip,
                      check=False, timeout=count * 3 + 10)
        res = {"tx": 0, "rx": 0, "out": out}
        m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
        if m:
            res["tx"], res["rx"] = int(m.group(1)), int(m.group(2))
        m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)", out)
        if m:
            res["rtt"] = f"{m.group(1)}/{m.group(2)}/{m.group(3)}"
        return res
