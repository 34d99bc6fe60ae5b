// The C++ test frontend as a guest behind the uplink, talking to the peer
// namespace's kernel stack: ARP, ICMP echo and UDP in both directions, and
// the node's own address answering while guest traffic flows. Counters are
// checked at both ends: the peer's interface and /proc/net/snmp, the
// daemon's stats.get.

#include <linux/if_ether.h>

#include "frontend/frame_checksum.hpp"
#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;

class FrontendTraffic : public UplinkTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(UplinkTest::SetUp());
    ASSERT_NO_FATAL_FAILURE(start_daemon(
        daemon_config(json::array({uplink_config()}), json::array({port_config(kVm1)}))));
    ASSERT_NO_FATAL_FAILURE(connect_guest(vm1_, kVm1));
  }

  std::unique_ptr<FrontendGuest> vm1_;
};

TEST_F(FrontendTraffic, GuestArpRequestIsAnsweredByThePeerThroughXdp) {
  const LinkCounters peer0 = lab_.peer_link();
  const json up0 = uplink_stats(), vm0 = port_stats("vm1");

  ASSERT_TRUE(vm1_->send(vm1_->arp_request(kPeerIp)));
  auto is_reply = [&](const PacketView& v) {
    return v.arp && v.arp_op == 2 && v.arp_sender_ip == kPeerIp;
  };
  ASSERT_TRUE(vm1_->pump_until(is_reply, 1)) << "no ARP reply from the peer reached the guest";

  for (const auto& f : vm1_->received()) {
    const PacketView v = PacketView::parse(f.bytes);
    if (!is_reply(v)) continue;
    EXPECT_EQ(v.arp_sender_mac, kPeerMac);
    EXPECT_EQ(v.arp_target_mac, vm1_->mac());
    EXPECT_EQ(v.arp_target_ip, vm1_->ip());
    // Unicast to the guest: only the XDP redirect delivers it (the flood
    // socket admits group-addressed frames only).
    EXPECT_EQ(v.dst, vm1_->mac());
  }
  const LinkCounters peer1 = lab_.peer_link();
  const json up1 = uplink_stats(), vm1 = port_stats("vm1");
  EXPECT_EQ(peer1.rx_packets - peer0.rx_packets, 1u) << "the guest's request at the peer";
  EXPECT_EQ(peer1.tx_packets - peer0.tx_packets, 1u) << "the peer's reply";
  EXPECT_EQ(u(vm1, "rx_packets") - u(vm0, "rx_packets"), 1u);
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), 1u);
  EXPECT_EQ(u(up1, "rx_packets") - u(up0, "rx_packets"), 1u);
  EXPECT_EQ(u(vm1, "tx_packets") - u(vm0, "tx_packets"), 1u);
  EXPECT_EQ(total(vm1.at("drops")), 0u) << vm1.dump();
  // The peer learned the guest from the request.
  std::string neigh;
  lab_.in_peer(std::string("ip neigh show ") + kVm1.ip + " dev " + UplinkLab::kPeerIf, &neigh);
  EXPECT_NE(neigh.find(kVm1.mac), std::string::npos) << neigh;
}

TEST_F(FrontendTraffic, PeerArpBroadcastReachesTheGuestAndTheNode) {
  std::unique_ptr<PacketSocket> node_arp;
  {
    NetnsScope in(lab_.node_fd());
    ASSERT_TRUE(in.ok());
    node_arp = std::make_unique<PacketSocket>(UplinkLab::kNodeIf, ETH_P_ARP);
  }
  ASSERT_TRUE(node_arp->valid());
  std::unique_ptr<UdpSocket> peer_udp;
  {
    NetnsScope in(lab_.peer_fd());
    peer_udp = std::make_unique<UdpSocket>();
  }
  const json up0 = uplink_stats(), vm0 = port_stats("vm1");
  const auto payload = testing::payload_pattern(100, 7);
  // The peer does not know the guest yet: its kernel asks by broadcast first.
  ASSERT_TRUE(peer_udp->send_to(kVm1.ip, 7000, payload));
  auto is_udp = [](const PacketView& v) { return v.udp && v.dst_port == 7000; };
  ASSERT_TRUE(vm1_->pump_until(is_udp, 1)) << "the datagram never reached the guest";

  auto is_request = [&](const PacketView& v) {
    return v.arp && v.arp_op == 1 && v.arp_target_ip == vm1_->ip() && v.is_broadcast() &&
           v.arp_sender_mac == kPeerMac;
  };
  EXPECT_EQ(vm1_->count(is_request), 1u) << "the peer's broadcast at the guest (flood socket)";
  EXPECT_EQ(vm1_->arp_replies_sent(), 1u);
  for (const auto& f : vm1_->received()) {
    const PacketView v = PacketView::parse(f.bytes);
    if (is_udp(v)) {
      EXPECT_TRUE(std::equal(v.payload.begin(), v.payload.end(), payload.begin(), payload.end()));
    }
  }
  // The node's kernel got the same broadcast (XDP_PASS).
  std::size_t node_requests = 0;
  for (const auto& f : node_arp->receive(16, 200))
    if (is_request(PacketView::parse(f))) ++node_requests;
  EXPECT_EQ(node_requests, 1u) << "the broadcast at the node's own stack";

  const json up1 = uplink_stats(), vm1 = port_stats("vm1");
  EXPECT_EQ(u(up1, "rx_packets") - u(up0, "rx_packets"), 2u)
      << "ARP request (flood) + datagram (XDP)";
  EXPECT_EQ(u(vm1, "tx_packets") - u(vm0, "tx_packets"), 2u);
  EXPECT_EQ(u(vm1, "rx_packets") - u(vm0, "rx_packets"), 1u) << "the guest's ARP reply";
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), 1u);
  std::string neigh;
  lab_.in_peer(std::string("ip neigh show ") + kVm1.ip + " dev " + UplinkLab::kPeerIf, &neigh);
  EXPECT_NE(neigh.find(kVm1.mac), std::string::npos) << neigh;
}

TEST_F(FrontendTraffic, PeerPingsTheGuest) {
  ASSERT_NO_FATAL_FAILURE(peer_neighbour(kVm1));
  std::unique_ptr<IcmpSocket> icmp;
  {
    NetnsScope in(lab_.peer_fd());
    icmp = std::make_unique<IcmpSocket>(0x4242);
  }
  ASSERT_TRUE(icmp->valid());
  const SnmpCounters snmp0 = lab_.peer_snmp();
  const LinkCounters peer0 = lab_.peer_link();
  const json up0 = uplink_stats(), vm0 = port_stats("vm1");
  constexpr int kCount = 10;
  int replies = 0;
  for (int seq = 1; seq <= kCount; ++seq) {
    const std::vector<std::uint8_t> payload(48, static_cast<std::uint8_t>(seq));
    ASSERT_TRUE(icmp->send_echo(kVm1.ip, static_cast<std::uint16_t>(seq), payload));
    ASSERT_TRUE(vm1_->pump(
        5s, [&] { return vm1_->echo_replies_sent() == static_cast<std::uint64_t>(seq); }))
        << "echo request " << seq << " never reached the guest";
    auto r = icmp->receive_reply(5000);
    ASSERT_TRUE(r.has_value()) << "no echo reply " << seq << " at the peer";
    EXPECT_EQ(r->seq, seq);
    EXPECT_EQ(r->payload, payload);
    EXPECT_EQ(r->from_ip, kVm1.ip);
    ++replies;
  }
  EXPECT_EQ(replies, kCount);
  const SnmpCounters snmp1 = lab_.peer_snmp();
  EXPECT_EQ(snmp1.at("Icmp.OutEchos") - snmp0.at("Icmp.OutEchos"), kCount);
  EXPECT_EQ(snmp1.at("Icmp.InEchoReps") - snmp0.at("Icmp.InEchoReps"), kCount);
  EXPECT_EQ(snmp1.at("Icmp.InCsumErrors"), snmp0.at("Icmp.InCsumErrors"));
  const LinkCounters peer1 = lab_.peer_link();
  EXPECT_EQ(peer1.tx_packets - peer0.tx_packets, kCount);
  EXPECT_EQ(peer1.rx_packets - peer0.rx_packets, kCount);
  const json up1 = uplink_stats(), vm1 = port_stats("vm1");
  EXPECT_EQ(u(up1, "rx_packets") - u(up0, "rx_packets"), kCount);
  EXPECT_EQ(u(vm1, "tx_packets") - u(vm0, "tx_packets"), kCount);
  EXPECT_EQ(u(vm1, "rx_packets") - u(vm0, "rx_packets"), kCount);
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), kCount);
  EXPECT_EQ(total(vm1.at("drops")) + total(up1.at("drops")), 0u) << vm1.dump() << up1.dump();
}

TEST_F(FrontendTraffic, GuestPingsThePeer) {
  ASSERT_NO_FATAL_FAILURE(peer_neighbour(kVm1));
  const SnmpCounters snmp0 = lab_.peer_snmp();
  const json up0 = uplink_stats(), vm0 = port_stats("vm1");
  constexpr int kCount = 10;
  for (int seq = 1; seq <= kCount; ++seq)
    ASSERT_TRUE(vm1_->send(
        vm1_->echo_request(kPeerMac, kPeerIp, 0x77, static_cast<std::uint16_t>(seq),
                           testing::payload_pattern(56, static_cast<std::uint32_t>(seq)))));
  auto is_reply = [](const PacketView& v) {
    return v.icmp && v.icmp_type == 0 && v.icmp_id == 0x77 && v.ip_src == kPeerIp;
  };
  ASSERT_TRUE(vm1_->pump_until(is_reply, kCount)) << vm1_->count(is_reply) << " replies";
  std::vector<bool> seen(kCount + 1);
  for (const auto& f : vm1_->received()) {
    const PacketView v = PacketView::parse(f.bytes);
    if (!is_reply(v)) continue;
    ASSERT_GE(v.icmp_seq, 1);
    ASSERT_LE(v.icmp_seq, kCount);
    seen[v.icmp_seq] = true;
    const auto expected = testing::payload_pattern(56, v.icmp_seq);
    EXPECT_TRUE(std::equal(v.payload.begin(), v.payload.end(), expected.begin(), expected.end()));
    EXPECT_TRUE(testing::verify_checksums(f.bytes).ok())
        << testing::verify_checksums(f.bytes).problem;
  }
  for (int seq = 1; seq <= kCount; ++seq) {
    EXPECT_TRUE(seen[static_cast<std::size_t>(seq)]) << seq;
  }
  const SnmpCounters snmp1 = lab_.peer_snmp();
  EXPECT_EQ(snmp1.at("Icmp.InEchos") - snmp0.at("Icmp.InEchos"), kCount);
  EXPECT_EQ(snmp1.at("Icmp.OutEchoReps") - snmp0.at("Icmp.OutEchoReps"), kCount);
  EXPECT_EQ(snmp1.at("Icmp.InCsumErrors"), snmp0.at("Icmp.InCsumErrors"));
  const json up1 = uplink_stats(), vm1 = port_stats("vm1");
  EXPECT_EQ(u(vm1, "rx_packets") - u(vm0, "rx_packets"), kCount);
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), kCount);
  EXPECT_EQ(u(up1, "rx_packets") - u(up0, "rx_packets"), kCount);
  EXPECT_EQ(u(vm1, "tx_packets") - u(vm0, "tx_packets"), kCount);
}

TEST_F(FrontendTraffic, UdpFromThePeerSocketReachesTheGuestIntact) {
  ASSERT_NO_FATAL_FAILURE(peer_neighbour(kVm1));
  std::unique_ptr<UdpSocket> peer_udp;
  {
    NetnsScope in(lab_.peer_fd());
    peer_udp = std::make_unique<UdpSocket>(6000);
  }
  const SnmpCounters snmp0 = lab_.peer_snmp();
  const LinkCounters peer0 = lab_.peer_link();
  const json up0 = uplink_stats(), vm0 = port_stats("vm1");
  constexpr int kCount = 300;
  auto is_udp = [](const PacketView& v) { return v.udp && v.dst_port == 7000; };
  for (int i = 0; i < kCount; ++i) {
    ASSERT_TRUE(peer_udp->send_to(
        kVm1.ip, 7000,
        testing::payload_pattern(18 + (i * 37) % 1400, static_cast<std::uint32_t>(i))));
    if (i % 32 == 31) {
      ASSERT_TRUE(vm1_->pump_until(is_udp, static_cast<std::size_t>(i + 1)));
    }
  }
  ASSERT_TRUE(vm1_->pump_until(is_udp, kCount)) << vm1_->count(is_udp) << " of " << kCount;
  int i = 0;
  for (const auto& f : vm1_->received()) {
    const PacketView v = PacketView::parse(f.bytes);
    if (!is_udp(v)) continue;
    const auto expected =
        testing::payload_pattern(18 + (i * 37) % 1400, static_cast<std::uint32_t>(i));
    EXPECT_TRUE(std::equal(v.payload.begin(), v.payload.end(), expected.begin(), expected.end()))
        << "datagram " << i << " (in order)";
    EXPECT_EQ(v.src_port, 6000);
    EXPECT_EQ(v.ip_src, kPeerIp);
    EXPECT_TRUE(testing::verify_checksums(f.bytes).ok())
        << testing::verify_checksums(f.bytes).problem;
    ++i;
  }
  EXPECT_EQ(i, kCount);
  const SnmpCounters snmp1 = lab_.peer_snmp();
  EXPECT_EQ(snmp1.at("Udp.OutDatagrams") - snmp0.at("Udp.OutDatagrams"), kCount);
  const LinkCounters peer1 = lab_.peer_link();
  EXPECT_EQ(peer1.tx_packets - peer0.tx_packets, kCount);
  const json up1 = uplink_stats(), vm1 = port_stats("vm1");
  EXPECT_EQ(u(up1, "rx_packets") - u(up0, "rx_packets"), kCount);
  EXPECT_EQ(u(vm1, "tx_packets") - u(vm0, "tx_packets"), kCount);
  EXPECT_EQ(total(vm1.at("drops")) + total(up1.at("drops")), 0u) << vm1.dump() << up1.dump();
}

TEST_F(FrontendTraffic, UdpFromTheGuestReachesThePeerSocketIntact) {
  std::unique_ptr<UdpSocket> sink;
  {
    NetnsScope in(lab_.peer_fd());
    sink = std::make_unique<UdpSocket>(7001, 8 << 20);
  }
  ASSERT_TRUE(sink->valid());
  const SnmpCounters snmp0 = lab_.peer_snmp();
  const LinkCounters peer0 = lab_.peer_link();
  const json up0 = uplink_stats(), vm0 = port_stats("vm1");
  constexpr int kCount = 300;
  for (int i = 0; i < kCount; ++i)
    ASSERT_TRUE(vm1_->send(vm1_->udp_to(
        kPeerMac, kPeerIp, 5000, 7001,
        testing::payload_pattern(1 + (i * 53) % 1472, static_cast<std::uint32_t>(i)))));
  std::vector<Datagram> got;
  while (got.size() < static_cast<std::size_t>(kCount)) {
    auto d = sink->receive(3000);
    if (!d) break;
    got.push_back(std::move(*d));
  }
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kCount));
  for (int i = 0; i < kCount; ++i) {
    EXPECT_EQ(got[static_cast<std::size_t>(i)].payload,
              testing::payload_pattern(1 + (i * 53) % 1472, static_cast<std::uint32_t>(i)))
        << "datagram " << i;
    EXPECT_EQ(got[static_cast<std::size_t>(i)].from_ip, kVm1.ip);
    EXPECT_EQ(got[static_cast<std::size_t>(i)].from_port, 5000);
  }
  const SnmpCounters snmp1 = lab_.peer_snmp();
  EXPECT_EQ(snmp1.at("Udp.InDatagrams") - snmp0.at("Udp.InDatagrams"), kCount);
  EXPECT_EQ(snmp1.at("Udp.InCsumErrors") - snmp0.at("Udp.InCsumErrors"), 0u);
  EXPECT_EQ(snmp1.at("Udp.InErrors") - snmp0.at("Udp.InErrors"), 0u);
  const LinkCounters peer1 = lab_.peer_link();
  EXPECT_EQ(peer1.rx_packets - peer0.rx_packets, kCount);
  const json up1 = uplink_stats(), vm1 = port_stats("vm1");
  EXPECT_EQ(u(vm1, "rx_packets") - u(vm0, "rx_packets"), kCount);
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), kCount);
  EXPECT_EQ(total(vm1.at("drops")) + total(up1.at("drops")), 0u) << vm1.dump() << up1.dump();
}

TEST_F(FrontendTraffic, NodeAddressAnswersPingWhileGuestTrafficFlows) {
  std::unique_ptr<UdpSocket> sink;
  std::unique_ptr<IcmpSocket> icmp;
  {
    NetnsScope in(lab_.peer_fd());
    sink = std::make_unique<UdpSocket>(7001, 16 << 20);
    icmp = std::make_unique<IcmpSocket>(0x5151);
  }
  ASSERT_TRUE(sink->valid() && icmp->valid());
  const SnmpCounters node0 = lab_.node_snmp();
  const json up0 = uplink_stats(), vm0 = port_stats("vm1");
  constexpr int kRounds = 20, kPerRound = 100;
  int pings = 0;
  std::size_t datagrams = 0;
  for (int r = 0; r < kRounds; ++r) {
    for (int i = 0; i < kPerRound; ++i)
      ASSERT_TRUE(vm1_->send(
          vm1_->udp_to(kPeerMac, kPeerIp, 5000, 7001, testing::payload_pattern(200, 0))));
    // The node's own address: XDP_PASS to the node's kernel, which answers.
    pings += icmp->ping(UplinkLab::kNodeIp, 1, 3000);
    datagrams += sink->drain().size();
  }
  while (datagrams < static_cast<std::size_t>(kRounds * kPerRound)) {
    if (!sink->receive(3000)) break;
    ++datagrams;
  }
  EXPECT_EQ(pings, kRounds) << "the node's own address stopped answering";
  EXPECT_EQ(datagrams, static_cast<std::size_t>(kRounds * kPerRound));
  const SnmpCounters node1 = lab_.node_snmp();
  EXPECT_EQ(node1.at("Icmp.InEchos") - node0.at("Icmp.InEchos"), kRounds);
  EXPECT_EQ(node1.at("Icmp.OutEchoReps") - node0.at("Icmp.OutEchoReps"), kRounds);
  // Nothing addressed to the node went to the guest (only the flooded ARP
  // request for the node's address, if the peer had to ask).
  EXPECT_EQ(vm1_->count([](const PacketView& v) { return v.ipv4 && v.ip_dst == kNodeIp; }), 0u);
  vm1_->pump(200ms);
  EXPECT_EQ(vm1_->count([](const PacketView& v) { return !v.arp; }), 0u);
  const json up1 = uplink_stats(), vm1 = port_stats("vm1");
  EXPECT_EQ(u(vm1, "rx_packets") - u(vm0, "rx_packets"), kRounds * kPerRound);
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), kRounds * kPerRound);
  EXPECT_FALSE(up1.at("drops").contains("xdp_redirect_failed"))
      << "frames XDP could not redirect are passed to the kernel, not dropped";
}

}  // namespace
}  // namespace xdpvhost::uplink_test
