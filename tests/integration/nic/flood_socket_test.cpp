// Broadcast and multicast reach both the node's kernel and the flood socket;
// unicast and the node's own outgoing broadcasts do not reach the socket.
#include "nic/flood_socket.hpp"

#include <poll.h>

#include <cstring>

#include "netns_fixture.hpp"
#include "nic/xdp_program.hpp"

namespace xdpvhost::xsk::test {
namespace {

const MacAddress kGuest = {0x02, 0x00, 0x00, 0x00, 0x00, 0xaa};
const MacAddress kBroadcast = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
const MacAddress kAllNodes = {0x33, 0x33, 0x00, 0x00, 0x00, 0x01};

class FloodSocketTest : public NetnsPair {
 protected:
  void SetUp() override {
    NetnsPair::SetUp();
    if (HasFatalFailure()) return;
    std::string error;
    program_ = XdpProgram::attach(kIfA, {}, error);
    ASSERT_TRUE(program_) << error;
    ASSERT_EQ(program_->add_guest_mac(kGuest), 0);
    flood_ = FloodSocket::open(kIfA, error);
    ASSERT_TRUE(flood_) << error;
  }
  void TearDown() override {
    flood_.reset();
    program_.reset();
    NetnsPair::TearDown();
  }

  // Frames on the flood socket until `count` or ~timeout_ms.
  std::vector<std::vector<std::uint8_t>> flooded(std::size_t count, int timeout_ms,
                                                 std::uint32_t capacity = 2048) {
    std::vector<std::vector<std::uint8_t>> out;
    std::vector<std::uint8_t> storage(8 * capacity);
    int waited = 0;
    while (out.size() < count && waited <= timeout_ms) {
      FloodFrame slots[8];
      for (int i = 0; i < 8; ++i) {
        slots[i].data = storage.data() + i * capacity;
        slots[i].capacity = capacity;
      }
      const int n = flood_->recv_batch(slots, 8);
      EXPECT_GE(n, 0);
      for (int i = 0; i < n; ++i) {
        out.emplace_back(slots[i].data, slots[i].data + slots[i].len);
        truncated_ += slots[i].truncated ? 1 : 0;
      }
      if (n > 0) continue;
      pollfd p{flood_->fd(), POLLIN, 0};
      ::poll(&p, 1, 10);
      waited += 10;
    }
    return out;
  }

  std::unique_ptr<XdpProgram> program_;
  std::unique_ptr<FloodSocket> flood_;
  int truncated_ = 0;
};

TEST_F(FloodSocketTest, OnlyGroupAddressedFramesAreCopied) {
  std::unique_ptr<PacketSocket> peer;
  in_b([&] { peer = std::make_unique<PacketSocket>(kIfB, kTestEtherType); });
  ASSERT_TRUE(peer->send(make_frame(kGuest, mac_b_, 1, 60)));
  ASSERT_TRUE(peer->send(make_frame(mac_a_, mac_b_, 2, 60)));
  ASSERT_TRUE(peer->send(make_frame(kBroadcast, mac_b_, 3, 60)));
  ASSERT_TRUE(peer->send(make_frame(kAllNodes, mac_b_, 4, 60)));
  const auto frames = flooded(3, 500);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0], make_frame(kBroadcast, mac_b_, 3, 60));
  EXPECT_EQ(frames[1], make_frame(kAllNodes, mac_b_, 4, 60));
  XdpSteerStats s;
  ASSERT_EQ(program_->read_stats(s), 0);
  EXPECT_EQ(s.passed_flood, 2u);  // passed to the kernel, which fed the flood socket
  FloodSocket::Stats fs;
  ASSERT_EQ(flood_->read_and_reset_stats(fs), 0);
  EXPECT_EQ(fs.queued, 2u);
  EXPECT_EQ(fs.dropped, 0u);
}

TEST_F(FloodSocketTest, ArpResolvesAndIsCopied) {
  run_in_b("ip neigh flush dev " + std::string(kIfB));
  int replies = 0;
  in_b([&] { replies = icmp_ping(kIpA, 1); });  // needs ARP first
  EXPECT_EQ(replies, 1);
  bool saw_request = false;
  for (const auto& f : flooded(1, 500)) {
    if (f.size() >= 42 && f[12] == 0x08 && f[13] == 0x06 &&
        std::equal(kBroadcast.bytes.begin(), kBroadcast.bytes.end(), f.begin())) {
      saw_request = true;
    }
  }
  EXPECT_TRUE(saw_request);
}

TEST_F(FloodSocketTest, TheNodesOwnBroadcastsAreNotCopied) {
  std::unique_ptr<PacketSocket> arp_at_b;
  in_b([&] { arp_at_b = std::make_unique<PacketSocket>(kIfB, 0x0806); });
  // Nobody has 10.77.0.99: the node broadcasts ARP requests out of xskv0.
  EXPECT_EQ(icmp_ping("10.77.0.99", 1, 1000), 0);
  EXPECT_FALSE(arp_at_b->receive(1, 1000).empty()) << "the node sent no ARP request";
  EXPECT_TRUE(flooded(1, 200).empty());
}

TEST_F(FloodSocketTest, LongFramesAreCutToTheBufferAndFlagged) {
  std::unique_ptr<PacketSocket> peer;
  in_b([&] { peer = std::make_unique<PacketSocket>(kIfB, kTestEtherType); });
  ASSERT_TRUE(peer->send(make_frame(kBroadcast, mac_b_, 1, 500)));
  const auto frames = flooded(1, 500, 64);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].size(), 64u);
  EXPECT_EQ(truncated_, 1);
}

}  // namespace
}  // namespace xdpvhost::xsk::test
