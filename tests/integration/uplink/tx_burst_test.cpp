// Guest TX bursts of thousands of frames through the uplink (docs/techniques.md: the
// daemon kicks the AF_XDP TX ring only when needed, and in copy mode keeps
// kicking while descriptors are pending, since the kernel sends a bounded
// number per sendto). Every frame must arrive at the peer, in order, in event
// mode (busy_poll_us 0: nothing but kicks and wakeups moves the frames) and
// with busy polling; the daemon's counters must equal the frames sent.

#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"

#include <arpa/inet.h>
#include <cstring>

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;

constexpr std::uint16_t kEtherType = 0x88b5;

std::vector<std::uint8_t> numbered_frame(const MacAddress& src, std::uint32_t seq) {
  std::vector<std::uint8_t> payload(46 + (seq * 131) % 1400, static_cast<std::uint8_t>(seq));
  const std::uint32_t be = htonl(seq);
  std::memcpy(payload.data(), &be, 4);
  return testing::build_ethernet(kPeerMac, src, kEtherType, payload);
}

struct BurstCase {
  const char* name;
  std::uint32_t busy_poll_us;
  std::uint32_t kick_every;  // guest kicks after this many frames
};

void PrintTo(const BurstCase& c, std::ostream* os) {
  *os << c.name;
}

class TxBurst : public UplinkTest, public ::testing::WithParamInterface<BurstCase> {};

TEST_P(TxBurst, EveryFrameOfAGuestBurstArrivesAtThePeer) {
  const BurstCase& c = GetParam();
  ASSERT_NO_FATAL_FAILURE(
      start_daemon(daemon_config(json::array({uplink_config()}), json::array({port_config(kVm1)}),
                                 json{{"tunables", {{"busy_poll_us", c.busy_poll_us}}}})));
  std::unique_ptr<FrontendGuest> vm1 = std::make_unique<FrontendGuest>(
      socket_path("vm1"), parse_mac_text(kVm1.mac), parse_ipv4_text(kVm1.ip));
  testing::NegotiateOptions options;
  options.queue_size = 1024;
  std::string error;
  ASSERT_TRUE(vm1->start(error, options)) << error;
  ASSERT_TRUE(wait_for([&] { return port_state("vm1") == "running"; }));

  std::unique_ptr<PacketSocket> peer;
  {
    NetnsScope in(lab_.peer_fd());
    peer = std::make_unique<PacketSocket>(UplinkLab::kPeerIf, kEtherType, 256 << 20);
  }
  ASSERT_TRUE(peer->valid());
  const LinkCounters node0 = lab_.node_link(), peer0 = lab_.peer_link();
  const json vm0 = port_stats("vm1"), up0 = uplink_stats();

  constexpr std::uint32_t kFrames = 20000;
  testing::TxOptions quiet;
  quiet.kick = false;
  auto& net = vm1->frontend().net();
  for (std::uint32_t seq = 0; seq < kFrames; ++seq) {
    const auto frame = numbered_frame(vm1->mac(), seq);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!net.send_frame(frame, std::nullopt, quiet)) {
      net.kick_tx();
      ASSERT_LT(std::chrono::steady_clock::now(), deadline)
          << "the daemon stopped taking frames at " << seq;
      std::this_thread::sleep_for(100us);
      net.reclaim_tx();
    }
    if ((seq + 1) % c.kick_every == 0) net.kick_tx();
  }
  net.kick_tx();
  ASSERT_TRUE(vm1->wait_tx_done(10s)) << "the daemon left guest TX chains unused";

  const auto frames = peer->receive(kFrames, 2000);
  EXPECT_EQ(peer->drops(), 0u) << "the test's own packet socket overflowed";
  ASSERT_EQ(frames.size(), kFrames);
  for (std::uint32_t i = 0; i < kFrames; ++i) {
    std::uint32_t be;
    std::memcpy(&be, frames[i].data() + 14, 4);
    ASSERT_EQ(ntohl(be), i) << "frames lost or reordered";
    ASSERT_EQ(frames[i], numbered_frame(vm1->mac(), i));
  }
  const LinkCounters node1 = lab_.node_link(), peer1 = lab_.peer_link();
  const json vm1s = port_stats("vm1"), up1 = uplink_stats();
  EXPECT_EQ(peer1.rx_packets - peer0.rx_packets, kFrames);
  EXPECT_EQ(node1.tx_packets - node0.tx_packets, kFrames);
  EXPECT_EQ(node1.tx_dropped - node0.tx_dropped, 0u);
  EXPECT_EQ(u(vm1s, "rx_packets") - u(vm0, "rx_packets"), kFrames);
  EXPECT_EQ(u(up1, "tx_packets") - u(up0, "tx_packets"), kFrames);
  EXPECT_EQ(total(vm1s.at("drops")) + total(up1.at("drops")), 0u) << vm1s.dump() << up1.dump();
  EXPECT_EQ(u(up1, "tx_invalid_descs"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, TxBurst,
                         ::testing::Values(BurstCase{"EventModeKickPerFrame", 0, 1},
                                           BurstCase{"EventModeKickPer512", 0, 512},
                                           BurstCase{"BusyPoll50KickPer512", 50, 512}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace xdpvhost::uplink_test
