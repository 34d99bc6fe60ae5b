// Frames longer than the guests' MTU allows (MTU 1500 + 14 Ethernet + 4 for
// one VLAN tag = 1518 bytes) are dropped and counted: from a guest on its
// port (drops.oversize), from the wire in the XDP program
// (uplinks.up0.drops.xdp_oversize) before they reach a socket. The longest
// allowed frame passes in both directions.

#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint16_t kEtherType = 0x88b5;  // IEEE 802 local experimental
constexpr std::size_t kLongest = 1500 + 14 + 4;

std::vector<std::uint8_t> raw_frame(const MacAddress& dst, const MacAddress& src, std::size_t len,
                                    std::uint8_t tag) {
  std::vector<std::uint8_t> payload(len - 14, tag);
  return testing::build_ethernet(dst, src, kEtherType, payload);
}

class Oversize : public UplinkTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(UplinkTest::SetUp());
    ASSERT_NO_FATAL_FAILURE(start_with_guest(vm1_));
  }
  std::unique_ptr<FrontendGuest> vm1_;
};

TEST_F(Oversize, GuestFrameAboveItsMtuIsDroppedOnItsPort) {
  std::unique_ptr<PacketSocket> peer;
  {
    NetnsScope in(lab_.peer_fd());
    peer = std::make_unique<PacketSocket>(UplinkLab::kPeerIf, kEtherType);
  }
  ASSERT_TRUE(peer->valid());
  const json vm0 = port_stats("vm1"), up0 = uplink_stats();
  ASSERT_TRUE(vm1_->send(raw_frame(kPeerMac, vm1_->mac(), kLongest + 1, 1)));
  ASSERT_TRUE(vm1_->send(raw_frame(kPeerMac, vm1_->mac(), 3000, 2)));
  ASSERT_TRUE(vm1_->send(raw_frame(kPeerMac, vm1_->mac(), kLongest, 3)));
  ASSERT_TRUE(vm1_->wait_tx_done());
  const auto frames = peer->receive(3, 1000);
  ASSERT_EQ(frames.size(), 1u) << "only the longest allowed frame may leave";
  EXPECT_EQ(frames[0].size(), kLongest);
  EXPECT_EQ(frames[0].back(), 3);
  const json vm1 = port_stats("vm1"), up1 = uplink_stats();
  EXPECT_EQ(u(vm1.at("drops"), "oversize") - u(vm0.at("drops"), "oversize"), 2u) << vm1.dump();
  EXPECT_EQ(u(vm1, "rx_packets") - u(vm0, "rx_packets"), 1u);
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), 1u);
  EXPECT_EQ(total(up1.at("drops")), total(up0.at("drops"))) << up1.dump();
}

TEST_F(Oversize, FramesTheInterfaceDropsAreCountedAsRefused) {
  // The peer takes at most 1000-byte packets: veth drops longer ones on the
  // way (NET_XMIT_DROP), which AF_XDP's sendto reports as EBUSY.
  std::string out;
  ASSERT_EQ(lab_.in_peer(std::string("ip link set ") + UplinkLab::kPeerIf + " mtu 1000", &out), 0)
      << out;
  const json up0 = uplink_stats();
  const LinkCounters peer0 = lab_.peer_link();
  constexpr int kFrames = 5;
  for (int i = 0; i < kFrames; ++i)
    ASSERT_TRUE(vm1_->send(raw_frame(kPeerMac, vm1_->mac(), 1400, static_cast<std::uint8_t>(i))));
  ASSERT_TRUE(vm1_->wait_tx_done());
  EXPECT_TRUE(wait_for(
      [&] {
        return u(uplink_stats().at("drops"), "uplink_refused") -
                   u(up0.at("drops"), "uplink_refused") ==
               kFrames;
      },
      3s))
      << uplink_stats().dump();
  EXPECT_EQ(lab_.peer_link().rx_packets, peer0.rx_packets);
}

TEST_F(Oversize, PeerFrameAboveTheGuestsMtuIsDroppedInXdp) {
  // Let the wire carry longer frames than the guests were told about.
  std::string out;
  ASSERT_EQ(lab_.in_node(std::string("ip link set ") + UplinkLab::kNodeIf + " mtu 3000", &out), 0)
      << out;
  ASSERT_EQ(lab_.in_peer(std::string("ip link set ") + UplinkLab::kPeerIf + " mtu 3000", &out), 0)
      << out;
  ASSERT_TRUE(wait_for([&] { return uplink_status().value("link", "") == "up"; }));
  std::unique_ptr<PacketSocket> peer;
  {
    NetnsScope in(lab_.peer_fd());
    peer = std::make_unique<PacketSocket>(UplinkLab::kPeerIf, kEtherType);
  }
  ASSERT_TRUE(peer->valid());
  const json vm0 = port_stats("vm1"), up0 = uplink_stats();
  // 1519: one byte too long; 1792: the longest a 2048-byte UMEM frame takes;
  // 2500, 3014 (the new wire MTU): would not fit a UMEM frame at all.
  const std::vector<std::size_t> too_long{kLongest + 1, 1792, 2500, 3014};
  for (std::size_t len : too_long)
    ASSERT_TRUE(peer->send(raw_frame(vm1_->mac(), kPeerMac, len, 9)));
  ASSERT_TRUE(peer->send(raw_frame(vm1_->mac(), kPeerMac, kLongest, 7)));
  auto is_ours = [](const PacketView& v) { return v.ethertype == kEtherType; };
  ASSERT_TRUE(vm1_->pump_until(is_ours, 1)) << "the longest allowed frame did not reach the guest";
  vm1_->pump(300ms);
  ASSERT_EQ(vm1_->count(is_ours), 1u);
  for (const auto& f : vm1_->received()) {
    if (!is_ours(PacketView::parse(f.bytes))) continue;
    EXPECT_EQ(f.bytes.size(), kLongest);
    EXPECT_EQ(f.bytes.back(), 7);
  }
  ASSERT_TRUE(wait_for(
      [&] {
        return u(uplink_stats().at("drops"), "xdp_oversize") - u(up0.at("drops"), "xdp_oversize") >=
               too_long.size();
      },
      3s));
  const json vm1 = port_stats("vm1"), up1 = uplink_stats();
  EXPECT_EQ(u(up1.at("drops"), "xdp_oversize") - u(up0.at("drops"), "xdp_oversize"),
            too_long.size())
      << up1.dump();
  // Dropped in XDP, not by the socket (rx_dropped) nor on the port.
  EXPECT_EQ(u(up1, "rx_dropped"), u(up0, "rx_dropped"));
  EXPECT_EQ(u(up1, "rx_packets") - u(up0, "rx_packets"), 1u);
  EXPECT_EQ(u(vm1, "tx_packets") - u(vm0, "tx_packets"), 1u);
  EXPECT_EQ(total(vm1.at("drops")), total(vm0.at("drops"))) << vm1.dump();
}

}  // namespace
}  // namespace xdpvhost::uplink_test

namespace xdpvhost::uplink_test {
namespace {

// A guest with MTU `mtu` on a wire with MTU `mtu`.
class Jumbo : public UplinkTest {
 protected:
  void start(std::uint32_t frame_size, std::uint32_t mtu = 3000) {
    std::string out;
    const std::string set_mtu = " mtu " + std::to_string(mtu);
    ASSERT_EQ(lab_.in_node(std::string("ip link set ") + UplinkLab::kNodeIf + set_mtu, &out), 0)
        << out;
    ASSERT_EQ(lab_.in_peer(std::string("ip link set ") + UplinkLab::kPeerIf + set_mtu, &out), 0)
        << out;
    json uplink = uplink_config();
    uplink["frame_size"] = frame_size;
    json port = port_config(kVm1);
    port["mtu"] = mtu;
    ASSERT_NO_FATAL_FAILURE(
        start_daemon(daemon_config(json::array({uplink}), json::array({port}))));
    ASSERT_NO_FATAL_FAILURE(connect_guest(vm1_, kVm1));
    NetnsScope in(lab_.peer_fd());
    peer_ = std::make_unique<PacketSocket>(UplinkLab::kPeerIf, kEtherType);
    ASSERT_TRUE(peer_->valid());
  }
  // A frame of `from_peer` bytes (the peer's packet socket sends up to MTU +
  // 14) reaches the guest intact, and one of `from_guest` (up to MTU + 18)
  // the peer; nothing dropped.
  void cross(std::uint32_t from_peer, std::uint32_t from_guest, std::uint8_t seq) {
    vm1_->clear_received();
    ASSERT_TRUE(peer_->send(raw_frame(vm1_->mac(), kPeerMac, from_peer, seq)));
    auto is_ours = [](const PacketView& v) { return v.ethertype == kEtherType; };
    ASSERT_TRUE(vm1_->pump_until(is_ours, 1)) << uplink_stats().dump();
    for (const auto& f : vm1_->received()) {
      if (is_ours(PacketView::parse(f.bytes))) {
        EXPECT_EQ(f.bytes, raw_frame(vm1_->mac(), kPeerMac, from_peer, seq));
      }
    }
    ASSERT_TRUE(vm1_->send(raw_frame(kPeerMac, vm1_->mac(), from_guest, seq + 1)));
    const auto frames = peer_->receive(1, 2000);
    ASSERT_EQ(frames.size(), 1u) << port_stats("vm1").dump() << uplink_stats().dump();
    EXPECT_EQ(frames[0], raw_frame(kPeerMac, vm1_->mac(), from_guest, seq + 1));
    EXPECT_EQ(total(uplink_stats().at("drops")) + total(port_stats("vm1").at("drops")), 0u);
  }
  std::unique_ptr<FrontendGuest> vm1_;
  std::unique_ptr<PacketSocket> peer_;
};

TEST_F(Jumbo, FramesUpToTheGuestMtuCrossTheUplinkWith4096ByteFrames) {
  ASSERT_NO_FATAL_FAILURE(start(4096));
  cross(3014, 3018, 5);
}

// MTU 9000 with the default 2048-byte frames: multi-buffer AF_XDP carries a
// 9014-byte frame in as a chain of 6 descriptors and a 9018-byte one out as
// 5 (Linux 6.6+; the kernel this suite runs on has it).
TEST_F(Jumbo, NineThousandByteMtuCrossesA2048ByteFrameUplinkAsDescriptorChains) {
  ASSERT_NO_FATAL_FAILURE(start(2048, 9000));
  cross(9014, 9018, 5);
  cross(1514, 1518, 7);  // and plain frames still as one descriptor
}

// A guest MTU above what the uplink carries (here its interface's MTU) is
// refused when the port is added, naming the limit, instead of losing its
// longer frames.
TEST_F(Jumbo, AGuestMtuAboveWhatTheUplinkCarriesIsRefusedNamingTheLimit) {
  ASSERT_NO_FATAL_FAILURE(start(2048, 3000));
  json port = port_config(kVm2);
  port["mtu"] = 9000;
  const RpcReply refused = request("port.add", port);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.error_message().find("mtu 9000 needs frames of 9018 bytes"), std::string::npos)
      << refused.error_message();
  EXPECT_NE(refused.error_message().find("interface MTU 3000"), std::string::npos)
      << refused.error_message();
  port["mtu"] = 3000;  // the interface's own MTU fits
  EXPECT_TRUE(request("port.add", port).ok());
}

// The interface's MTU lowered below a port's while the daemon was down (or
// before it was restarted after a crash): the daemon starts with its ports,
// as it keeps them when the MTU drops while it runs, says which frames it
// will drop, and frames that fit still cross. (It refused to start.)
TEST_F(Jumbo, ADaemonStartedOnAnInterfaceMtuBelowItsPortsKeepsThem) {
  std::string out;
  for (const auto& [ns_cmd, ifname] : {std::pair{&UplinkLab::in_node, UplinkLab::kNodeIf},
                                       std::pair{&UplinkLab::in_peer, UplinkLab::kPeerIf}}) {
    ASSERT_EQ((lab_.*ns_cmd)(std::string("ip link set ") + ifname + " mtu 1280", &out), 0) << out;
  }
  json port = port_config(kVm1);
  port["mtu"] = 1500;
  ASSERT_NO_FATAL_FAILURE(
      start_daemon(daemon_config(json::array({uplink_config()}), json::array({port}))));
  EXPECT_NE(daemon_->log_tail(200).find("port vm1: mtu 1500 needs frames of 1518 bytes"),
            std::string::npos)
      << daemon_->log_tail();
  ASSERT_NO_FATAL_FAILURE(connect_guest(vm1_, kVm1));
  {
    NetnsScope in(lab_.peer_fd());
    peer_ = std::make_unique<PacketSocket>(UplinkLab::kPeerIf, kEtherType);
  }
  ASSERT_TRUE(peer_->valid());
  cross(1294, 1298, 5);  // the longest frames the interface's MTU 1280 carries
}

// The interface's MTU raised while the daemon runs: the uplink carries the
// longer frames from the next try on (every 5 s), without a restart.
TEST_F(Jumbo, AnInterfaceMtuRaisedAtRunTimeIsFollowed) {
  ASSERT_NO_FATAL_FAILURE(start(2048, 3000));
  json port = port_config(kVm2);
  port["mtu"] = 6000;
  ASSERT_FALSE(request("port.add", port).ok()) << "6000 is above the interface's 3000";
  std::string out;
  for (const auto& [ns_cmd, ifname] : {std::pair{&UplinkLab::in_node, UplinkLab::kNodeIf},
                                       std::pair{&UplinkLab::in_peer, UplinkLab::kPeerIf}})
    ASSERT_EQ((lab_.*ns_cmd)(std::string("ip link set ") + ifname + " mtu 6000", &out), 0) << out;
  EXPECT_TRUE(wait_for([&] { return request("port.add", port).ok(); }, 15s))
      << request("port.add", port).error_message();
}

}  // namespace
}  // namespace xdpvhost::uplink_test
