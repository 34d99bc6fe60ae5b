// Packets as chains of AF_XDP descriptors (multi-buffer): where packets end
// in a batch of descriptors, how long they are, how many descriptors a
// length takes, and the options a TX chain carries.
#include "xsk/descriptor_chain.hpp"

#include <gtest/gtest.h>
#include <linux/if_xdp.h>

#include <vector>

namespace xdpvhost::xsk {
namespace {

constexpr std::uint32_t C = kPacketContinues;

// A batch of descriptors as options; lengths 100 each unless given.
std::vector<xdp_desc> batch(std::initializer_list<std::uint32_t> options,
                            std::initializer_list<std::uint32_t> lens = {}) {
  std::vector<xdp_desc> out;
  auto len = lens.begin();
  for (const std::uint32_t o : options) {
    xdp_desc d{};
    d.addr = out.size() * 2048 + 256;
    d.len = len != lens.end() ? *len++ : 100;
    d.options = o;
    out.push_back(d);
  }
  return out;
}

std::uint32_t whole(const std::vector<xdp_desc>& descs) {
  return whole_packet_descriptors(static_cast<std::uint32_t>(descs.size()),
                                  [&](std::uint32_t i) { return descs[i].options; });
}

PacketExtent extent(const std::vector<xdp_desc>& descs, std::uint32_t first) {
  return packet_extent(first, static_cast<std::uint32_t>(descs.size()),
                       [&](std::uint32_t i) -> const xdp_desc& { return descs[i]; });
}

TEST(DescriptorChain, TheFlagIsTheKernelsXdpPktContd) {
  EXPECT_EQ(kPacketContinues, 1u);  // XDP_PKT_CONTD (1 << 0), linux/if_xdp.h 6.6
  EXPECT_EQ(kBindUseSg, 1u << 4);   // XDP_USE_SG
  EXPECT_TRUE(continues(C));
  EXPECT_FALSE(continues(0));
  EXPECT_FALSE(continues(2));  // XDP_TX_METADATA is not a continuation
}

TEST(DescriptorChain, DescriptorsForALength) {
  EXPECT_EQ(descriptors_for(0, 1792), 0u);
  EXPECT_EQ(descriptors_for(60, 1792), 1u);
  EXPECT_EQ(descriptors_for(1792, 1792), 1u);
  EXPECT_EQ(descriptors_for(1793, 1792), 2u);
  EXPECT_EQ(descriptors_for(9000, 1792), 6u);  // RX, 2048-byte frames: 5 * 1792 = 8960 < 9000
  EXPECT_EQ(descriptors_for(9018, 2048), 5u);  // TX uses whole frames
  EXPECT_EQ(descriptors_for(18 * 2048, 2048), kCopyModeMaxTxDescriptors);
  EXPECT_EQ(descriptors_for(100, 0), 0u);
}

TEST(DescriptorChain, SingleDescriptorPacketsAreAllWhole) {
  EXPECT_EQ(whole(batch({})), 0u);
  EXPECT_EQ(whole(batch({0})), 1u);
  EXPECT_EQ(whole(batch({0, 0, 0})), 3u);
}

TEST(DescriptorChain, ATrailingUnfinishedChainIsNotCounted) {
  EXPECT_EQ(whole(batch({C, C, 0})), 3u);
  EXPECT_EQ(whole(batch({C, C, 0, C})), 3u);
  EXPECT_EQ(whole(batch({0, C, C, 0, 0, C, C})), 5u);
  EXPECT_EQ(whole(batch({C})), 0u);
  EXPECT_EQ(whole(batch({C, C, C, C})), 0u);  // a packet longer than the batch
}

TEST(DescriptorChain, PacketExtentSumsTheChain) {
  const auto d = batch({0, C, C, 0, C}, {60, 1792, 1792, 100, 1792});
  EXPECT_EQ(extent(d, 0).descriptors, 1u);
  EXPECT_EQ(extent(d, 0).len, 60u);
  EXPECT_EQ(extent(d, 1).descriptors, 3u);
  EXPECT_EQ(extent(d, 1).len, 1792u + 1792 + 100);
  EXPECT_TRUE(extent(d, 1).complete());
  // The last chain has no end among the descriptors.
  EXPECT_FALSE(extent(d, 4).complete());
  EXPECT_EQ(extent(d, 4).len, 0u);
  EXPECT_FALSE(extent(d, 5).complete());  // nothing left
}

TEST(DescriptorChain, WalkingExtentsCoversExactlyTheWholePackets) {
  const auto d = batch({C, 0, 0, C, C, C, C, C, 0, C, C});
  const std::uint32_t n = whole(d);
  ASSERT_EQ(n, 9u);
  std::vector<std::uint32_t> sizes;
  for (std::uint32_t i = 0; i < n;) {
    const PacketExtent e =
        packet_extent(i, n, [&](std::uint32_t k) -> const xdp_desc& { return d[k]; });
    ASSERT_TRUE(e.complete()) << "at " << i;
    sizes.push_back(e.descriptors);
    i += e.descriptors;
  }
  EXPECT_EQ(sizes, (std::vector<std::uint32_t>{2, 1, 6}));
}

TEST(DescriptorChain, TxOptionsMarkAllButTheLast) {
  EXPECT_EQ(tx_options(0, 1), 0u);
  std::vector<std::uint32_t> options;
  for (std::uint32_t i = 0; i < 5; ++i) options.push_back(tx_options(i, 5));
  EXPECT_EQ(options, (std::vector<std::uint32_t>{C, C, C, C, 0}));
  // A chain written with tx_options is one whole packet.
  std::vector<xdp_desc> d(5);
  for (std::uint32_t i = 0; i < 5; ++i) d[i].options = options[i];
  EXPECT_EQ(whole(d), 5u);
  EXPECT_EQ(extent(d, 0).descriptors, 5u);
}

}  // namespace
}  // namespace xdpvhost::xsk
