// A hostile tenant on a learning port (mac_policy learn, the DRA plugin's
// ports before fixed MACs) tries to take a MAC that is someone else's on the
// LAN, through the real daemon, a real veth uplink with native XDP and the
// C++ vhost-user frontend. The lab's peer namespace is the LAN and its
// gateway; vm1 is a bystander tenant with a fixed MAC on the same uplink.
// Each test asserts what the victims see: the gateway's frames, the node's
// pings and the bystander's traffic go where they went before, and nothing
// the attacker sent from the stolen MAC reached the wire or another guest.

#include <set>

#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;

constexpr const char* kAttackerIp = "10.99.0.66";

class MacTheft : public UplinkTest {
 protected:
  static json learning_port(const std::string& name, const std::string& socket,
                            const char* policy = "learn") {
    return {{"name", name},
            {"socket", socket},
            {"mode", "server"},
            {"mac_policy", policy},
            {"uplink", "up0"}};
  }
  // up0, the bystander vm1 (fixed MAC, connected) and the learning ports att
  // (`att_policy`) and new.
  void start(const json& extra = json::object(), const char* att_policy = "learn") {
    ASSERT_NO_FATAL_FAILURE(start_daemon(daemon_config(
        json::array({uplink_config()}),
        json::array({port_config(kVm1), learning_port("att", socket_path("att"), att_policy),
                     learning_port("new", socket_path("new"))}),
        extra)));
    ASSERT_NO_FATAL_FAILURE(connect_guest(vm1_, kVm1));
  }
  // A guest on port `port` whose frames come from `mac`.
  void connect_sender(std::unique_ptr<FrontendGuest>& out, const char* port, const char* mac,
                      const char* ip) {
    ASSERT_NO_FATAL_FAILURE(connect_guest(out, GuestAddress{port, mac, ip}));
    out->set_answer_arp(false);
    out->set_answer_icmp(false);
  }
  json port_get(const char* name) { return call("port.get", {{"name", name}}); }
  std::uint64_t mac_refused(const char* port, const char* reason) {
    return port_stats(port).at("mac_refused").value(reason, std::uint64_t{0});
  }
  std::uint64_t spoofed(const char* port) {
    return port_stats(port).at("drops").value("spoofed_source", std::uint64_t{0});
  }
  // The learning port must be refused `mac` for `reason`, and stay without a MAC.
  void expect_refused(const char* port, const char* mac, const char* reason) {
    EXPECT_TRUE(wait_for([&] { return mac_refused(port, reason) == 1; }, 3s))
        << port_stats(port).dump();
    const json p = port_get(port);
    ASSERT_TRUE(p.contains("mac_refusal")) << p.dump();
    EXPECT_EQ(p["mac_refusal"].value("mac", ""), mac) << p.dump();
    EXPECT_EQ(p["mac_refusal"].value("reason", ""), reason) << p.dump();
    EXPECT_FALSE(p.contains("mac")) << "the port took " << p.value("mac", "");
    EXPECT_EQ(p.value("mac_source", ""), "none");
  }
  // A packet socket on the peer's end of the veth: what the node sent.
  std::unique_ptr<PacketSocket> peer_capture() {
    NetnsScope in(lab_.peer_fd());
    EXPECT_TRUE(in.ok());
    auto s = std::make_unique<PacketSocket>(UplinkLab::kPeerIf, 0x0003, 4 << 20);
    EXPECT_TRUE(s->valid());
    return s;
  }
  // Frames from `src`, of those the attacker could have sent (from its IP,
  // or a guest's frame of its kind).
  static std::size_t from(const std::vector<std::vector<std::uint8_t>>& frames,
                          const MacAddress& src) {
    std::size_t n = 0;
    for (const auto& f : frames) {
      const PacketView v = PacketView::parse(f);
      if (v.src == src && (v.udp || (v.arp && v.arp_sender_ip == parse_ipv4_text(kAttackerIp))))
        ++n;
    }
    return n;
  }

  std::unique_ptr<FrontendGuest> vm1_, att_, new_;
};

TEST_F(MacTheft, AGuestCannotTakeTheGatewaysMacOnceItWasSeenOnTheWire) {
  ASSERT_NO_FATAL_FAILURE(start());
  // The gateway talks on the LAN: it pings the node (its ARP broadcast and
  // echo requests pass the XDP program, which remembers their source).
  std::unique_ptr<IcmpSocket> gateway;
  std::unique_ptr<UdpSocket> gateway_udp;
  {
    NetnsScope in(lab_.peer_fd());
    gateway = std::make_unique<IcmpSocket>(0x3030);
    gateway_udp = std::make_unique<UdpSocket>(7201, 4 << 20);
  }
  ASSERT_EQ(gateway->ping(UplinkLab::kNodeIp, 2, 3000), 2);
  const auto wire = peer_capture();

  // The attacker sends from the gateway's MAC: a broadcast (which would
  // teach the LAN's bridges the gateway is here) and a frame to vm1.
  ASSERT_NO_FATAL_FAILURE(connect_sender(att_, "att", UplinkLab::kPeerMac, kAttackerIp));
  ASSERT_TRUE(att_->send(att_->arp_request(parse_ipv4_text(kVm1.ip))));
  ASSERT_TRUE(att_->send(att_->udp_to(parse_mac_text(kVm1.mac), parse_ipv4_text(kVm1.ip), 6000,
                                      6001, testing::payload_pattern(64, 1))));
  expect_refused("att", UplinkLab::kPeerMac, "seen_on_wire");
  EXPECT_NE(
      port_get("att").value("mac_refusal", json::object()).value("detail", "").find("uplink up0"),
      std::string::npos);
  EXPECT_TRUE(wait_for([&] { return spoofed("att") == 2; }, 3s)) << port_stats("att").dump();

  // vm1's frames to the gateway reach it; none goes to the attacker.
  ASSERT_NO_FATAL_FAILURE(peer_neighbour(kVm1));
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(vm1_->send(vm1_->udp_to(kPeerMac, kPeerIp, 7200, 7201,
                                        testing::payload_pattern(100, static_cast<unsigned>(i)))));
  int arrived = 0;
  while (arrived < 5 && gateway_udp->receive(3000)) ++arrived;
  EXPECT_EQ(arrived, 5) << "vm1's frames to the gateway";
  att_->pump(300ms);
  EXPECT_EQ(att_->count([](const PacketView& v) { return v.udp && v.dst_port == 7201; }), 0u)
      << "vm1's frames to the gateway reached the attacker";
  vm1_->pump(100ms);
  EXPECT_EQ(vm1_->count([](const PacketView& v) {
    return v.src == kPeerMac && ((v.udp && v.dst_port == 6001) ||
                                 (v.arp && v.arp_sender_ip == parse_ipv4_text(kAttackerIp)));
  }),
            0u)
      << "a frame the attacker sent from the stolen MAC reached vm1";
  // Nothing left the node from the gateway's MAC: the LAN keeps the gateway
  // where it is.
  EXPECT_EQ(from(wire->receive(64, 300), kPeerMac), 0u);
}

TEST_F(MacTheft, AGuestCannotTakeTheNodesOwnMac) {
  ASSERT_NO_FATAL_FAILURE(start());
  const auto wire = peer_capture();
  ASSERT_NO_FATAL_FAILURE(connect_sender(att_, "att", UplinkLab::kNodeMac, kAttackerIp));
  ASSERT_TRUE(att_->send(att_->arp_request(kPeerIp)));
  expect_refused("att", UplinkLab::kNodeMac, "node_address");
  EXPECT_NE(port_get("att")
                .value("mac_refusal", json::object())
                .value("detail", "")
                .find(UplinkLab::kNodeIf),
            std::string::npos)
      << port_get("att").dump();

  // The LAN still reaches the node, and none of it goes to the attacker.
  const SnmpCounters node0 = lab_.node_snmp();
  std::unique_ptr<IcmpSocket> lan;
  {
    NetnsScope in(lab_.peer_fd());
    lan = std::make_unique<IcmpSocket>(0x3131);
  }
  EXPECT_EQ(lan->ping(UplinkLab::kNodeIp, 4, 3000), 4);
  const SnmpCounters node1 = lab_.node_snmp();
  EXPECT_EQ(node1.at("Icmp.InEchos") - node0.at("Icmp.InEchos"), 4u);
  att_->pump(300ms);
  EXPECT_EQ(att_->count([](const PacketView& v) { return v.icmp; }), 0u)
      << "the node's echo requests reached the attacker";
  EXPECT_EQ(from(wire->receive(64, 300), parse_mac_text(UplinkLab::kNodeMac)), 0u)
      << "the attacker's frame left the node under its MAC";
}

TEST_F(MacTheft, OnlyMacsInTheConfiguredPrefixesAreLearnedAndAFirstFrameWaitsNotDropped) {
  ASSERT_NO_FATAL_FAILURE(
      start({{"mac_learning", {{"prefixes", json::array({"52:54:00:00:00:00/24"})}}}}));
  std::unique_ptr<UdpSocket> sink;
  {
    NetnsScope in(lab_.peer_fd());
    sink = std::make_unique<UdpSocket>(7301, 4 << 20);
  }
  const auto wire = peer_capture();
  // Outside the pool: refused, and its frame never reached the peer.
  ASSERT_NO_FATAL_FAILURE(connect_sender(att_, "att", "02:11:22:33:44:55", kAttackerIp));
  ASSERT_TRUE(att_->send(att_->udp_to(kPeerMac, kPeerIp, 7300, 7301, {1, 2, 3})));
  expect_refused("att", "02:11:22:33:44:55", "outside_prefixes");
  EXPECT_EQ(from(wire->receive(64, 300), parse_mac_text("02:11:22:33:44:55")), 0u);
  EXPECT_FALSE(sink->receive(100).has_value());

  // Inside it: learned, and the frames sent before the decision waited for
  // it in the guest's ring and arrived (no loss for a guest that is right).
  ASSERT_NO_FATAL_FAILURE(connect_sender(new_, "new", "52:54:00:00:20:77", "10.99.0.77"));
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(new_->send(new_->udp_to(kPeerMac, kPeerIp, 7300, 7301,
                                        testing::payload_pattern(80, static_cast<unsigned>(i)))));
  int arrived = 0;
  while (arrived < 3 && sink->receive(3000)) ++arrived;
  EXPECT_EQ(arrived, 3);
  const json p = port_get("new");
  EXPECT_EQ(p.value("mac", ""), "52:54:00:00:20:77") << p.dump();
  EXPECT_EQ(p.value("mac_source", ""), "learned");
  EXPECT_FALSE(p.contains("mac_refusal"));
  const json s = port_stats("new");
  EXPECT_EQ(total(s.at("drops")), 0u) << s.dump();
  EXPECT_EQ(total(s.at("mac_refused")), 0u) << s.dump();
}

// A learn-move guest that sends each frame from a new source MAC gets its
// burst of decisions (mac_learning.relearn_burst, 4) and then one a second:
// the others are refused on the datapath without asking (rate_limited),
// none of their frames reaches the wire (no CAM-table flood on the LAN),
// and the log shows each decision, not each frame.
TEST_F(MacTheft, AGuestCyclingThroughSourceMacsGetsItsBurstOfDecisionsNotOnePerFrame) {
  ASSERT_NO_FATAL_FAILURE(start(json::object(), "learn-move"));
  std::unique_ptr<UdpSocket> sink;
  {
    NetnsScope in(lab_.peer_fd());
    sink = std::make_unique<UdpSocket>(7501, 4 << 20);
  }
  const auto wire = peer_capture();
  ASSERT_NO_FATAL_FAILURE(connect_sender(att_, "att", "52:54:00:99:00:00", kAttackerIp));
  constexpr int kFrames = 100;
  for (int i = 0; i < kFrames; ++i) {
    auto frame = att_->udp_to(kPeerMac, kPeerIp, 7500, 7501,
                              testing::payload_pattern(64, static_cast<unsigned>(i)));
    frame[10] = static_cast<std::uint8_t>(i >> 8);  // a new source MAC each frame
    frame[11] = static_cast<std::uint8_t>(i);
    ASSERT_TRUE(att_->send(frame));
  }
  ASSERT_TRUE(att_->wait_tx_done());
  EXPECT_TRUE(wait_for([&] {
    const json s = port_stats("att");
    return u(s.at("drops"), "spoofed_source") + u(s, "rx_packets") >= kFrames;
  })) << port_stats("att").dump();
  const json s = port_stats("att");
  const std::uint64_t learned = u(s, "rx_packets");
  EXPECT_GE(learned, 4u) << s.dump();
  EXPECT_LE(learned, 6u) << "the burst, and a token a second since: " << s.dump();
  EXPECT_EQ(mac_refused("att", "rate_limited"), kFrames - learned) << s.dump();
  EXPECT_EQ(u(s.at("drops"), "spoofed_source"), kFrames - learned);
  // Only the learned MACs' frames reached the LAN.
  int arrived = 0;
  while (sink->receive(500)) ++arrived;
  EXPECT_EQ(static_cast<std::uint64_t>(arrived), learned);
  std::set<MacAddress> sources;
  for (const auto& f : wire->receive(256, 300))
    if (const PacketView v = PacketView::parse(f); v.udp && v.dst_port == 7501)
      sources.insert(v.src);
  EXPECT_EQ(sources.size(), learned);
  std::size_t lines = 0;
  const std::string log = daemon_->log();
  for (auto at = log.find("port att: learned MAC"); at != std::string::npos;
       at = log.find("port att: learned MAC", at + 1))
    ++lines;
  EXPECT_EQ(lines, learned) << "a line a decision, none a refused frame";
  // The bystander is served throughout.
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
}

}  // namespace
}  // namespace xdpvhost::uplink_test
