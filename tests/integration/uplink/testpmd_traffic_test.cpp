// A DPDK 22.11 testpmd guest (net_virtio_user) behind the uplink, talking to
// the peer namespace's kernel: the peer pings it (icmpecho answers ARP and
// echo requests: the ARP request reaches it through the flood socket, the
// echo requests through XDP), it sends UDP to a peer socket (txonly), and
// receives the peer's UDP (rxonly). Counted by testpmd, the daemon and the
// peer's kernel.

#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;

std::uint64_t delta(const SnmpCounters& a, const SnmpCounters& b, const char* key) {
  return a.at(key) - b.at(key);
}

class TestpmdTraffic : public UplinkTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(UplinkTest::SetUp());
    ASSERT_NO_FATAL_FAILURE(start_daemon(
        daemon_config(json::array({uplink_config()}), json::array({port_config(kPmd)}))));
  }

  // After testpmd stopped forwarding: until the daemon took every frame
  // testpmd put on its TX ring (they stay there, the port is still up).
  json port_stats_after(const TestpmdCounters& c) {
    wait_for([&] { return port_stats(kPmd.name).at("rx_packets").get<std::uint64_t>() >= c.tx; });
    return port_stats(kPmd.name);
  }

  std::unique_ptr<TestpmdGuest> pmd_;
};

TEST_F(TestpmdTraffic, PeerPingsTestpmdIcmpecho) {
  ASSERT_NO_FATAL_FAILURE(start_testpmd(pmd_, kPmd, "icmpecho"));
  std::string out;
  lab_.in_peer(std::string("ip neigh flush dev ") + UplinkLab::kPeerIf, &out);
  std::unique_ptr<IcmpSocket> icmp;
  {
    NetnsScope in(lab_.peer_fd());
    icmp = std::make_unique<IcmpSocket>(0x6161);
  }
  const SnmpCounters s0 = lab_.peer_snmp();
  const LinkCounters peer0 = lab_.peer_link();
  const json p0 = port_stats(kPmd.name), up0 = uplink_stats();
  constexpr int kCount = 10;
  EXPECT_EQ(icmp->ping(kPmd.ip, kCount, 3000), kCount);
  // The peer resolved the guest: its broadcast came through the flood
  // socket, testpmd's ARP reply went out through the uplink.
  lab_.in_peer(std::string("ip neigh show ") + kPmd.ip, &out);
  EXPECT_NE(out.find(kPmd.mac), std::string::npos) << out;

  const TestpmdCounters c = pmd_->stop_forwarding();
  ASSERT_TRUE(c.valid) << pmd_->log();
  const json p1 = port_stats_after(c), up1 = uplink_stats();
  const SnmpCounters s1 = lab_.peer_snmp();
  const LinkCounters peer1 = lab_.peer_link();
  EXPECT_EQ(delta(s1, s0, "Icmp.OutEchos"), static_cast<std::uint64_t>(kCount));
  EXPECT_EQ(delta(s1, s0, "Icmp.InEchoReps"), static_cast<std::uint64_t>(kCount));
  EXPECT_GE(c.rx, static_cast<std::uint64_t>(kCount + 1)) << "ARP request + echo requests";
  EXPECT_EQ(c.tx, c.rx) << "icmpecho answers every ARP and echo request it gets";
  EXPECT_EQ(u(p1, "tx_packets") - u(p0, "tx_packets"), c.rx)
      << "delivered by the daemon = received by testpmd";
  EXPECT_EQ(u(p1, "rx_packets") - u(p0, "rx_packets"), c.tx)
      << "taken by the daemon = sent by testpmd";
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), c.tx);
  EXPECT_EQ(u(up1, "rx_packets") - u(up0, "rx_packets"), c.rx);
  EXPECT_EQ(peer1.rx_packets - peer0.rx_packets, c.tx);
  EXPECT_EQ(peer1.tx_packets - peer0.tx_packets, c.rx);
  EXPECT_EQ(total(p1.at("drops")) + total(up1.at("drops")), 0u) << p1.dump() << up1.dump();
}

TEST_F(TestpmdTraffic, TestpmdTxonlyUdpReachesThePeerSocket) {
  std::unique_ptr<UdpSocket> sink;
  {
    NetnsScope in(lab_.peer_fd());
    sink = std::make_unique<UdpSocket>(7003, 64 << 20);
  }
  ASSERT_TRUE(sink->valid());
  const SnmpCounters s0 = lab_.peer_snmp();
  const LinkCounters node0 = lab_.node_link();
  const json up0 = uplink_stats();
  ASSERT_NO_FATAL_FAILURE(
      start_testpmd(pmd_, kPmd, "txonly",
                    {std::string("--eth-peer=0,") + UplinkLab::kPeerMac,
                     std::string("--tx-ip=") + kPmd.ip + "," + UplinkLab::kPeerIp,
                     "--tx-udp=9000,7003", "--txpkts=128"}));
  std::size_t datagrams = 0;
  const auto until = std::chrono::steady_clock::now() + 1500ms;
  while (std::chrono::steady_clock::now() < until) {
    while (auto d = sink->receive(5)) {
      ++datagrams;
      EXPECT_EQ(d->payload.size(), 128u - 14 - 20 - 8);
      EXPECT_EQ(d->from_ip, kPmd.ip);
      EXPECT_EQ(d->from_port, 9000);
      if (HasFailure() || std::chrono::steady_clock::now() >= until) break;
    }
  }
  const TestpmdCounters c = pmd_->stop_forwarding();
  ASSERT_TRUE(c.valid) << pmd_->log();
  const json p1 = port_stats_after(c);
  while (auto d = sink->receive(300)) ++datagrams;
  const SnmpCounters s1 = lab_.peer_snmp();
  const LinkCounters node1 = lab_.node_link();
  const json up1 = uplink_stats();
  std::cout << "testpmd txonly: sent " << c.tx << ", peer socket got " << datagrams
            << ", rcvbuf errors " << delta(s1, s0, "Udp.RcvbufErrors") << ", veth drops "
            << node1.tx_dropped - node0.tx_dropped << "\n";
  EXPECT_GT(c.tx, 1000u);
  EXPECT_EQ(u(p1, "rx_packets"), c.tx) << "every frame testpmd handed over was taken";
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), c.tx) << "and sent on the uplink";
  EXPECT_EQ(total(p1.at("drops")) + total(up1.at("drops")), 0u) << p1.dump() << up1.dump();
  // The node's veth passed each one on or counted it as dropped; what
  // passed reached the peer's UDP layer: read, or lost to the full buffer.
  EXPECT_EQ((node1.tx_packets - node0.tx_packets) + (node1.tx_dropped - node0.tx_dropped), c.tx);
  EXPECT_EQ(delta(s1, s0, "Udp.InDatagrams") + delta(s1, s0, "Udp.RcvbufErrors"),
            node1.tx_packets - node0.tx_packets);
  EXPECT_EQ(delta(s1, s0, "Udp.InDatagrams"), datagrams);
  EXPECT_EQ(delta(s1, s0, "Udp.InCsumErrors"), 0u);
  EXPECT_GT(datagrams, 0u);
}

TEST_F(TestpmdTraffic, PeerUdpReachesTestpmdRxonly) {
  ASSERT_NO_FATAL_FAILURE(peer_neighbour(kPmd));
  ASSERT_NO_FATAL_FAILURE(start_testpmd(pmd_, kPmd, "rxonly"));
  std::unique_ptr<UdpSocket> sender;
  {
    NetnsScope in(lab_.peer_fd());
    sender = std::make_unique<UdpSocket>(6001);
  }
  const SnmpCounters s0 = lab_.peer_snmp();
  const json p0 = port_stats(kPmd.name), up0 = uplink_stats();
  constexpr int kBatches = 40, kBatch = 64;
  for (int b = 0; b < kBatches; ++b) {
    for (int i = 0; i < kBatch; ++i)
      ASSERT_TRUE(sender->send_to(
          kPmd.ip, 7000,
          testing::payload_pattern(100 + (i * 13) % 1300, static_cast<std::uint32_t>(i))));
    // Paced by testpmd's progress: no batch overruns its RX ring, however
    // long its forwarding core is descheduled.
    TestpmdCounters now;
    ASSERT_TRUE(wait_for(
        [&] {
          now = pmd_->port_stats();
          return now.valid && now.rx >= static_cast<std::uint64_t>((b + 1) * kBatch);
        },
        20s))
        << "batch " << b << ": testpmd has " << now.rx << " (nombuf " << now.rx_nombuf
        << "); daemon " << port_stats(kPmd.name).dump();
  }
  const TestpmdCounters c = pmd_->stop_forwarding();
  ASSERT_TRUE(c.valid) << pmd_->log();
  const SnmpCounters s1 = lab_.peer_snmp();
  const json p1 = port_stats_after(c), up1 = uplink_stats();
  constexpr std::uint64_t kTotal = kBatches * kBatch;
  EXPECT_EQ(delta(s1, s0, "Udp.OutDatagrams"), kTotal);
  EXPECT_EQ(u(up1, "rx_packets") - u(up0, "rx_packets"), kTotal);
  EXPECT_EQ(u(p1, "tx_packets") - u(p0, "tx_packets"), kTotal);
  EXPECT_EQ(c.rx, kTotal) << "testpmd received";
  EXPECT_EQ(total(p1.at("drops")) + total(up1.at("drops")), 0u) << p1.dump() << up1.dump();
  EXPECT_EQ(u(up1, "rx_ring_full") + u(up1, "rx_dropped"),
            u(up0, "rx_ring_full") + u(up0, "rx_dropped"));
}

}  // namespace
}  // namespace xdpvhost::uplink_test
