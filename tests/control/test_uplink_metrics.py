"""Uplink metrics against real AF_XDP traffic: xdpvhostd in a network
namespace with an uplink on one end of a veth pair, the other end in a peer
namespace; DPDK testpmd guests on two ports. Frames the peer sends to a
guest and frames a guest sends out through the uplink are counted by the
sender, the receiver, stats.get and the scrape, and all agree.

  netns xvctl-<pid>-node                      netns xvctl-<pid>-peer
  xdpvhostd, uplink up0 on xvctl-n0  <veth>   xvctl-p0: AF_PACKET sender/counter
  vm1 (testpmd txonly), vm2 (testpmd rxonly)
"""

import os
import time
import unittest

import ctltest
from xvtest import netns, prom
from xvtest.testpmd import taken_mismatch
from xvtest.waiting import wait_until

PID = os.getpid()
NODE, PEER = f"xvctl-{PID}-node", f"xvctl-{PID}-peer"
NODE_IF, PEER_IF = "xvctl-n0", "xvctl-p0"
PEER_MAC = "02:78:76:00:10:02"
MAC1, MAC2 = "52:54:00:00:70:01", "52:54:00:00:70:02"
METRICS = f"127.0.0.1:{ctltest.METRICS_PORT + 13}"
FRAMES = 5000

# Runs in the peer namespace: sends FRAMES UDP frames to MAC2, paced.
SENDER = r"""
import socket, struct, sys, time
ifname, dst, src, n = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', '')), \
    bytes.fromhex(sys.argv[3].replace(':', '')), int(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
def csum(b):
    t = sum(struct.unpack('!%dH' % (len(b) // 2), b))
    while t >> 16: t = (t & 0xffff) + (t >> 16)
    return ~t & 0xffff
payload = bytes(range(64))
udp = struct.pack('!HHHH', 1024, 9, 8 + len(payload), 0) + payload
ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 0, 0, 64, 17, 0,
                 bytes([10, 98, 0, 1]), bytes([10, 98, 0, 2]))
ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
frame = dst + src + b'\x08\x00' + ip + udp
for i in range(n):
    s.send(frame)
    if i % 32 == 31: time.sleep(0.002)
print(len(frame))
"""


@unittest.skipUnless(os.geteuid() == 0, "needs root for namespaces and XDP")
class UplinkMetrics(unittest.TestCase):
    def setUp(self):
        netns.remove_orphaned("xvctl-")
        self.addCleanup(netns.delete, PEER)
        self.addCleanup(netns.delete, NODE)
        for ns in (NODE, PEER):
            netns.create(ns)
        netns.veth(NODE, NODE_IF, PEER, PEER_IF, peer_mac=PEER_MAC)
        netns.run_in(PEER, "ethtool", "-K", PEER_IF, "tx", "off")
        self.dir = ctltest.workdir("uplink-metrics")
        self.socks = [os.path.join(self.dir, f"vm{i}.sock") for i in (1, 2)]
        config = {
            "uplinks": [{"name": "up0", "interface": NODE_IF, "bind": "copy"}],
            "ports": [{"name": "vm1", "socket": self.socks[0], "mac": MAC1, "uplink": "up0"},
                      {"name": "vm2", "socket": self.socks[1], "mac": MAC2, "uplink": "up0"}],
            "metrics": {"listen": METRICS},
        }
        bpf = os.environ.get("XDPVHOST_BPF_OBJECT")
        if bpf:
            config["bpf_object"] = bpf
        self.daemon = ctltest.checked_daemon(self.dir, config, netns=NODE)
        self.daemon.start()
        self.addCleanup(self.stop_daemon)
        wait_until(lambda: self.daemon.call("uplink.list")[0]["queues"][0]["bind_mode"] == "copy",
                   what="queue 0 bound")

    def stop_daemon(self):
        self.assertEqual(self.daemon.stop(), 0, self.daemon.tail())

    def scrape(self):
        text = netns.run_in(NODE, "curl", "-sf", f"http://{METRICS}/metrics").stdout
        return prom.parse(text)

    def guest(self, name, sock, mac, mode, main_lcore, peer=None):
        g = ctltest.testpmd_guest(name, sock, mac, mode, self.dir, lcores="0,1",
                                  main_lcore=main_lcore, peer=peer)
        self.addCleanup(g.kill)
        return g.start().wait_forwarding()

    def test_counters_agree_with_the_wire(self):
        # Peer -> vm2: every frame the peer sends reaches the guest through the uplink.
        rx = self.guest("up-vm2-rx", self.socks[1], MAC2, "rxonly", 0)
        wait_until(lambda: self.daemon.port_state("vm2") == "running", what="vm2 running")
        sender = netns.run_in(PEER, "python3", "-c", SENDER, PEER_IF, MAC2, PEER_MAC, str(FRAMES),
                              timeout=120)
        frame_len = int(sender.stdout.strip())
        wait_until(lambda: self.daemon.call("stats.get", port="vm2")["ports"]["vm2"]["tx_packets"]
                   >= FRAMES, timeout=20, what="frames at vm2")
        received = rx.stop()
        # vm1 -> peer: testpmd txonly to the peer's MAC leaves through the uplink. The
        # peer's interface counter counts it (IPv6 is off in both namespaces and nothing
        # else talks on the wire meanwhile); a packet socket could not keep up.
        peer_rx = lambda: int(netns.run_in(  # noqa: E731
            PEER, "cat", f"/sys/class/net/{PEER_IF}/statistics/rx_packets").stdout)
        uplink_tx = lambda: self.daemon.call("stats.get", uplink="up0")[  # noqa: E731
            "uplinks"]["up0"]["queues"][0]["tx_packets"]
        peer_rx0, uplink_tx0 = peer_rx(), uplink_tx()
        tx = self.guest("up-vm1-tx", self.socks[0], MAC1, "txonly", 1, peer=PEER_MAC)
        time.sleep(2)
        sent = tx.stop()
        time.sleep(1)  # the uplink's TX ring drains
        counted = peer_rx() - peer_rx0

        stats = self.daemon.call("stats.get")
        f = self.scrape()
        v = lambda name, **l: prom.value(f, name, **l)  # noqa: E731
        up, q0 = stats["uplinks"]["up0"], stats["uplinks"]["up0"]["queues"][0]
        print(f"\npeer sent {FRAMES}, vm2 received {received['rx']}; vm1 sent {sent['tx']}, "
              f"uplink tx {q0['tx_packets']}, peer counted {counted}; xsk {q0}")
        # The scrape and stats.get agree on every uplink counter.
        for d in ("rx", "tx"):
            self.assertEqual(v("xdpvhost_uplink_packets_total", uplink="up0", queue=0,
                               direction=d), q0[f"{d}_packets"])
            self.assertEqual(v("xdpvhost_uplink_bytes_total", uplink="up0", queue=0,
                               direction=d), q0[f"{d}_bytes"])
        for stat in ("rx_dropped", "rx_invalid_descs", "tx_invalid_descs", "rx_ring_full",
                     "rx_fill_ring_empty_descs", "tx_ring_empty_descs"):
            self.assertEqual(v(f"xdpvhost_uplink_xsk_{stat}_total", uplink="up0", queue=0),
                             q0[stat], stat)
        for reason, n in up["drops"].items():
            matches = [val for name, labels, val in f["xdpvhost_uplink_drops_total"]["samples"]
                       if labels["reason"] == reason]
            if matches:
                self.assertEqual(sum(matches), n, reason)
        self.assertEqual(v("xdpvhost_uplink_queue_info", uplink="up0", queue=0,
                           bind_mode="copy"), 1)
        self.assertEqual(v("xdpvhost_uplink_link_state", uplink="up0", state="up"), 1)
        # Peer -> guest: the wire, the uplink, the port and testpmd agree.
        self.assertEqual(q0["rx_packets"], FRAMES)
        self.assertEqual(q0["rx_bytes"], FRAMES * frame_len)
        self.assertEqual(v("xdpvhost_uplink_xdp_frames_total", uplink="up0",
                           outcome="redirected"), FRAMES)
        self.assertEqual(stats["ports"]["vm2"]["tx_packets"], FRAMES)
        self.assertEqual(received["rx"], FRAMES)
        # Guest -> peer: everything testpmd sent left through the uplink (unicast waits for
        # room rather than drop), and what the peer counted is what went out.
        self.assertGreater(sent["tx"], 1000)
        # When testpmd quits, what the daemon had not taken yet (it was holding the guest
        # back: the uplink was full) is abandoned with the ring (taken_mismatch).
        taken = v("xdpvhost_port_packets_total", port="vm1", direction="rx")
        self.assertEqual(taken_mismatch(sent["tx"], taken), "")
        self.assertEqual(stats["ports"]["vm1"]["rx_packets"], taken)
        self.assertEqual(q0["tx_packets"] + sum(stats["ports"]["vm1"]["drops"].values()), taken)
        self.assertEqual(counted, q0["tx_packets"] - uplink_tx0)

    def test_the_resource_ledger_shows_what_the_daemon_holds(self):
        """status.resources and the xdpvhost_open_fds/mapped families against
        /proc seen from outside: fds by kind, the XDP program and its maps,
        UMEM and rings, and a guest's memory, mapped while it runs and gone
        with it."""
        g = self.guest("ledger-vm2", self.socks[1], MAC2, "rxonly", 0)
        wait_until(lambda: self.daemon.port_state("vm2") == "running", what="vm2 running")
        outside = self.daemon.settled_resources()["fd_kinds"]
        ledger = self.daemon.call("status")["resources"]
        names = {"eventpoll": "epoll", "bpf-prog": "bpf_prog", "bpf-map": "bpf_map"}
        seen = {}
        for kind, n in outside.items():
            kind = names.get(kind, kind)
            kind = kind if kind in ledger["fds"] else "other"
            seen[kind] = seen.get(kind, 0) + n
        for kind, n in ledger["fds"].items():
            if kind in ("total", "limit"):
                continue
            if kind == "socket":  # the status call's own connection is open while it is counted
                self.assertIn(n - seen.get(kind, 0), (0, 1), (ledger["fds"], outside))
            else:
                self.assertEqual(n, seen.get(kind, 0), (kind, ledger["fds"], outside))
        self.assertIn("xdp", [p["type"] for p in ledger["bpf_programs"]], ledger["bpf_programs"])
        self.assertIn("xskmap", [m["type"] for m in ledger["bpf_maps"]], ledger["bpf_maps"])
        self.assertTrue(all(o["memlock_bytes"] > 0 for o in ledger["bpf_maps"]), ledger["bpf_maps"])
        mapped = ledger["mapped"]
        self.assertGreaterEqual(mapped["umem"]["bytes"], 2048 * 2048, mapped)
        self.assertGreaterEqual(mapped["xsk_ring"]["count"], 4, "rx, tx, fill and completion rings")
        self.assertGreater(mapped["guest_memory"]["bytes"], 0, mapped)
        self.assertGreater(ledger["threads"], 1)
        f = self.scrape()
        for kind in ("bpf_prog", "bpf_map", "eventfd", "epoll", "timerfd"):
            self.assertEqual(prom.value(f, "xdpvhost_open_fds", kind=kind), ledger["fds"][kind], kind)
        self.assertEqual(prom.value(f, "xdpvhost_mapped_bytes", kind="umem"), mapped["umem"]["bytes"])
        # The heap as glibc counts it: the daemon's tables and buffers are in
        # use, and the scrape reads the same allocator (it moves by the
        # scrape's own allocations between the two reads, not by megabytes).
        heap = ledger["heap"]
        self.assertGreater(heap["in_use_bytes"], 64 * 1024, heap)
        self.assertLess(abs(prom.value(f, "xdpvhost_heap_bytes", state="in_use") - heap["in_use_bytes"]),
                        4 << 20, heap)
        self.assertGreaterEqual(prom.value(f, "xdpvhost_heap_bytes", state="free"), 0)
        g.stop()
        wait_until(lambda: self.daemon.call("status")["resources"]["mapped"]["guest_memory"]["bytes"] == 0,
                   what="the guest's memory unmapped once it is gone")


if __name__ == "__main__":
    unittest.main(verbosity=2)
