"""The soak's node: two network namespaces joined by a veth pair with two
queues each way, and xdpvhostd in the node namespace with that veth as its
uplink, three guest ports and a state file.

  netns xvsoak-<pid>-node                        netns xvsoak-<pid>-peer
  xdpvhostd (2 service threads)                  xvsoak-p0 10.79.0.1/24
    uplink up0 on xvsoak-n0 (queues 0, 1) <veth>   static neighbour: the QEMU guest
    g0  server port, testpmd guests                 paced unicast UDP to g0, g1, q0
    g1  client port, testpmd guests (server=1)
    q0  server port, QEMU guests (2 queue pairs)
    churn-NN  ports added and removed over the control socket
    uplink up1 on xvsoak-n1 (queue 0) <veth>      xvsoak-p1 (no address)
              added and removed over the control socket, with ports u1-N

Nothing here leaves the two namespaces: IPv6 is off in both, the neighbours
are static, so every frame on the veth is unicast and the frame accounting
can close (soak_accounting.py)."""

import json
import os
import subprocess

from xvtest import netns
from xvtest.daemon import Daemon

PREFIX = "xvsoak-"
NODE_IF, PEER_IF = "xvsoak-n0", "xvsoak-p0"
# The second uplink's veth: there all run long; the uplink on it comes and goes.
NODE_IF1, PEER_IF1 = "xvsoak-n1", "xvsoak-p1"
PEER_MAC = "02:78:76:00:5a:01"
PEER_IP, GUEST_IP = "10.79.0.1", "10.79.0.2"
QUEUES = 2            # the veth's channels, each way, at the baseline
BASE_MTU = 1500
METRICS = "127.0.0.1:19590"  # inside the node namespace: no other test's port

# The guest ports: name -> (mode, MAC). g0/g1 carry testpmd guests, q0 QEMU guests.
GUEST_PORTS = {
    "g0": ("server", "52:54:00:5a:00:10"),
    "g1": ("client", "52:54:00:5a:00:11"),
    "q0": ("server", "52:54:00:5a:00:20"),
}


class Lab:
    def __init__(self, workdir, daemon_binary, bpffs=False):
        pid = os.getpid()
        self.node, self.peer = f"{PREFIX}{pid}-node", f"{PREFIX}{pid}-peer"
        self.workdir = workdir
        self.sock_dir = os.path.join(workdir, "sockets")
        os.makedirs(self.sock_dir, exist_ok=True)
        self.daemon_binary = daemon_binary
        self.bpffs = bpffs  # as in the DaemonSet: libxdp attaches through its dispatcher
        self.daemon = None

    # ---- namespaces and the veth ---------------------------------------------
    def build(self):
        netns.remove_orphaned(PREFIX)
        for ns in (self.node, self.peer):
            netns.create(ns)
        self.create_veth()
        netns.run("ip", "-n", self.node, "link", "add", NODE_IF1, "type", "veth", "peer", "name",
                  PEER_IF1, "netns", self.peer)
        self.in_node("ip", "link", "set", NODE_IF1, "up")
        self.in_peer("ip", "link", "set", PEER_IF1, "up")

    def teardown(self):
        for ns in (self.node, self.peer):
            netns.delete(ns)

    def in_node(self, *cmd, check=True):
        return netns.run_in(self.node, *cmd, check=check)

    def in_peer(self, *cmd, check=True):
        return netns.run_in(self.peer, *cmd, check=check)

    def veth_exists(self):
        return self.in_node("ip", "link", "show", "dev", NODE_IF, check=False).returncode == 0

    def create_veth(self):
        q = str(QUEUES)
        netns.run("ip", "-n", self.node, "link", "add", NODE_IF, "numtxqueues", q, "numrxqueues", q,
                  "type", "veth", "peer", "name", PEER_IF, "numtxqueues", q, "numrxqueues", q,
                  "address", PEER_MAC, "netns", self.peer)
        self.in_peer("ip", "addr", "add", f"{PEER_IP}/24", "dev", PEER_IF)
        self.in_node("ip", "link", "set", NODE_IF, "up")
        self.set_peer_link(up=True)

    def set_peer_link(self, up):
        """The peer's end down or up. Taking a link down flushes its
        neighbours, static ones too: the guest's is put back before the link
        is up, or the first reply to the guest would follow an ARP broadcast."""
        if not up:
            self.in_peer("ip", "link", "set", PEER_IF, "down")
            return
        self.in_peer("ip", "neigh", "replace", GUEST_IP, "lladdr", GUEST_PORTS["q0"][1], "dev",
                     PEER_IF, "nud", "permanent")
        self.in_peer("ip", "link", "set", PEER_IF, "up")

    def delete_veth(self):
        self.in_node("ip", "link", "del", NODE_IF, check=False)

    def restore_veth(self):
        """The baseline: the veth there, both ends up, MTU 1500, two channels."""
        if not self.veth_exists():
            self.create_veth()
        for run, ifname in ((self.in_node, NODE_IF), (self.in_peer, PEER_IF)):
            run("ip", "link", "set", ifname, "mtu", str(BASE_MTU))
        self.in_node("ip", "link", "set", NODE_IF, "up")
        self.set_peer_link(up=True)
        self.in_node("ethtool", "-L", NODE_IF, "rx", str(QUEUES), "tx", str(QUEUES))

    # ---- the daemon ------------------------------------------------------------
    def socket_path(self, port):
        return os.path.join(self.sock_dir, f"{port}.sock")

    def config(self):
        ports = [{"name": name, "socket": self.socket_path(name), "mode": mode, "mac": mac,
                  "uplink": "up0", "queues": 2} for name, (mode, mac) in GUEST_PORTS.items()]
        config = {
            "threads": {"count": 2},
            # "all": the uplink follows the channel changes the soak makes.
            "uplinks": [{"name": "up0", "interface": NODE_IF, "bind": "copy", "queues": "all"}],
            "ports": ports,
            "metrics": {"listen": METRICS},
            "state_file": os.path.join(self.workdir, "state.json"),
            "log": {"level": "info"},
        }
        bpf = os.environ.get("XDPVHOST_BPF_OBJECT")
        if bpf:
            config["bpf_object"] = bpf
        return config

    def start_daemon(self):
        """Starts the daemon, the first time with the config, then again as
        it was (its state file holds what was added since)."""
        if self.daemon is None:
            self.daemon = Daemon(self.workdir, self.config(), binary=self.daemon_binary,
                                 netns=self.node, bpffs=self.bpffs, start_timeout=60)
        return self.daemon.start()

    def rewrite_config(self, change):
        """Applies change(config dict) to the daemon's config file (for a SIGHUP)."""
        change(self.daemon.config)
        tmp = self.daemon.config_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.daemon.config, f, indent=2)
        os.replace(tmp, self.daemon.config_path)

    def scrape(self):
        """The metrics page, fetched from inside the node namespace."""
        return subprocess.run(["ip", "netns", "exec", self.node, "curl", "-sf", "--max-time", "10",
                               f"http://{METRICS}/metrics"], capture_output=True, text=True,
                              timeout=30)
