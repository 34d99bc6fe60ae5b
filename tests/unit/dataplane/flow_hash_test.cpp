// Flow hashing for multi-queue guests: stable per flow, sensitive to every
// field of the 5-tuple, blind to payload, and spreading flows evenly over
// queue groups and over the queues within a group.

#include "dataplane/flow_hash.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "net_test_guest.hpp"

namespace xdpvhost::dataplane {
namespace {

const std::uint8_t kDst[6] = {0x52, 0x54, 0, 0, 0, 0xa};
const std::uint8_t kSrc[6] = {0x52, 0x54, 0, 0, 0, 0xb};

std::uint32_t hash_of(const std::vector<std::uint8_t>& bytes) {
  const Span span{bytes.data(), static_cast<std::uint32_t>(bytes.size())};
  return flow_hash(Frame(span));
}

// A UDP/IPv4 frame of source port `sport` (payload `fill`).
std::vector<std::uint8_t> udp4(std::uint16_t sport, std::uint8_t fill = 0) {
  auto f = test::udp_frame(kDst, kSrc, 32);
  f[34] = static_cast<std::uint8_t>(sport >> 8);
  f[35] = static_cast<std::uint8_t>(sport);
  std::memset(f.data() + 42, fill, 32);
  return f;
}

// The same flow as IPv6: 40-byte header, next header UDP, then the ports.
std::vector<std::uint8_t> udp6(std::uint16_t sport, std::uint8_t last_byte_of_src = 1) {
  std::vector<std::uint8_t> f(14 + 40 + 8 + 16, 0);
  std::memcpy(f.data(), kDst, 6);
  std::memcpy(f.data() + 6, kSrc, 6);
  f[12] = 0x86;
  f[13] = 0xdd;
  f[14] = 0x60;
  f[14 + 6] = 17;
  f[14 + 8] = 0xfd;
  f[14 + 8 + 15] = last_byte_of_src;
  f[14 + 24] = 0xfd;
  f[14 + 24 + 15] = 2;
  f[54] = static_cast<std::uint8_t>(sport >> 8);
  f[55] = static_cast<std::uint8_t>(sport);
  return f;
}

TEST(FlowHash, OneFlowAlwaysHashesAlikeWhateverItCarries) {
  EXPECT_EQ(hash_of(udp4(40000, 0x00)), hash_of(udp4(40000, 0xff)));
  EXPECT_EQ(hash_of(udp6(40000)), hash_of(udp6(40000)));
}

TEST(FlowHash, EveryFieldOfTheFiveTupleCounts) {
  const std::uint32_t base = hash_of(udp4(40000));
  EXPECT_NE(base, hash_of(udp4(40001))) << "source port";
  auto f = udp4(40000);
  f[37] ^= 1;  // destination port
  EXPECT_NE(base, hash_of(f));
  f = udp4(40000);
  f[29] ^= 1;  // source address
  EXPECT_NE(base, hash_of(f));
  f = udp4(40000);
  f[33] ^= 1;  // destination address
  EXPECT_NE(base, hash_of(f));
  f = udp4(40000);
  f[23] = 6;  // TCP instead of UDP
  EXPECT_NE(base, hash_of(f));
  EXPECT_NE(hash_of(udp6(40000)), hash_of(udp6(40001)));
  EXPECT_NE(hash_of(udp6(40000, 1)), hash_of(udp6(40000, 3)));
}

TEST(FlowHash, FragmentsOfADatagramHashAlikeWithoutPorts) {
  auto first = udp4(40000);
  first[20] = 0x20;          // MF
  auto later = udp4(50000);  // a later fragment: no UDP header there, just bytes
  later[20] = 0x00;
  later[21] = 0x10;  // offset 16 * 8
  EXPECT_EQ(hash_of(first), hash_of(later));
}

TEST(FlowHash, AFramesHashIsComputedOnceAndKept) {
  // The forwarder hashes a spread guest's flow to pick its queue group, the
  // guest port to pick its RX queue: the second reads what the first kept.
  auto bytes = udp4(1000);
  const Span span{bytes.data(), static_cast<std::uint32_t>(bytes.size())};
  const Frame frame(span);
  EXPECT_FALSE(frame.flow_hash_known);
  const std::uint32_t first = flow_hash(frame);
  EXPECT_TRUE(frame.flow_hash_known);
  EXPECT_EQ(first, hash_flow(frame));
  bytes[35] ^= 1;  // another source port under the same frame: not hashed again
  EXPECT_EQ(flow_hash(frame), first);
  EXPECT_NE(hash_flow(frame), first);
  EXPECT_NE(flow_hash(Frame(span)), first) << "a new frame hashes afresh";
}

TEST(FlowHash, AVlanTagIsLookedThrough) {
  auto tag = [](std::vector<std::uint8_t> f) {
    const std::uint8_t t[4] = {0x81, 0x00, 0x00, 0x05};
    f.insert(f.begin() + 12, t, t + 4);
    return f;
  };
  EXPECT_EQ(hash_of(tag(udp4(40000, 1))), hash_of(tag(udp4(40000, 2))));
  EXPECT_NE(hash_of(tag(udp4(40000))), hash_of(tag(udp4(40001))));
}

TEST(FlowHash, NonIpFramesHashByAddressesAndType) {
  std::vector<std::uint8_t> arp(60, 0);
  std::memcpy(arp.data(), kDst, 6);
  std::memcpy(arp.data() + 6, kSrc, 6);
  arp[12] = 0x08;
  arp[13] = 0x06;
  const std::uint32_t h = hash_of(arp);
  arp[40] = 7;  // payload
  EXPECT_EQ(h, hash_of(arp));
  arp[11] = 0x0c;  // another source MAC
  EXPECT_NE(h, hash_of(arp));
  EXPECT_EQ(hash_of(std::vector<std::uint8_t>(10, 0)), 0u) << "no Ethernet header";
}

// 4096 flows (source ports) over 4 queues in 1, 2 or 4 groups: every
// (group, queue) gets between 20 % and 30 % of them.
TEST(FlowHash, FlowsSpreadEvenlyOverGroupsAndTheQueuesWithin) {
  constexpr int kFlows = 4096;
  for (const std::size_t groups : {std::size_t{1}, std::size_t{2}, std::size_t{4}}) {
    const std::size_t per_group = 4 / groups;
    std::array<int, 4> hits{};
    for (int i = 0; i < kFlows; ++i) {
      const std::uint32_t h = hash_of(udp4(static_cast<std::uint16_t>(30000 + i)));
      const std::size_t g = group_for_flow(h, groups);
      const std::size_t q = queue_for_flow(h, per_group);
      ASSERT_LT(g, groups);
      ASSERT_LT(q, per_group);
      ++hits[g * per_group + q];
    }
    for (std::size_t k = 0; k < 4; ++k) {
      EXPECT_GT(hits[k], kFlows / 5) << groups << " groups, slot " << k;
      EXPECT_LT(hits[k], kFlows * 3 / 10) << groups << " groups, slot " << k;
    }
  }
}

}  // namespace
}  // namespace xdpvhost::dataplane
