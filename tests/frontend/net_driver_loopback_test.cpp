// The virtio-net driver (NetDriver) against device-side readers on the same
// memory: TX chain layouts and headers, RX mergeable and non-mergeable
// reassembly, malformed used entries.

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "frontend/frame_builder.hpp"
#include "frontend/frame_checksum.hpp"
#include "frontend/loopback_device.hpp"
#include "frontend/net_driver.hpp"

namespace xdpvhost::testing {
namespace {

using virtio::Feature;
using virtio::NetHeader;

constexpr std::uint64_t kModern = virtio::bit(Feature::kVersion1) |
                                  virtio::bit(Feature::kRingIndirectDesc) |
                                  virtio::bit(Feature::kNetCsum);
constexpr std::uint64_t kModernMergeable = kModern | virtio::bit(Feature::kNetMrgRxbuf);

struct NetFixture {
  explicit NetFixture(std::uint64_t features, bool event_idx = false)
      : memory(ArenaOptions{.size = 16u << 20, .two_regions = true}),
        rx(memory, 0, DriverQueueOptions{64, event_idx, 32}),
        tx(memory, 1, DriverQueueOptions{64, event_idx, 32}),
        net(memory, rx, tx, features, 16384),
        rx_dev(memory, rx),
        tx_dev(memory, tx) {}
  GuestMemoryArena memory;
  DriverQueue rx;
  DriverQueue tx;
  NetDriver net;
  LoopbackDevice rx_dev;
  LoopbackDevice tx_dev;
};

std::vector<std::uint8_t> test_frame(std::size_t payload, std::uint32_t seed) {
  UdpFrameSpec spec;
  spec.dst_mac = make_mac(2);
  spec.src_mac = make_mac(1);
  spec.payload = payload_pattern(payload, seed);
  return build_udp(spec);
}

struct TxCase {
  ChainLayout layout;
  bool indirect;
  std::size_t expected_segments;  // for a 1000-byte frame, chunk 256, 12-byte header
};

class FrontendNetTxLayout : public ::testing::TestWithParam<TxCase> {};

TEST_P(FrontendNetTxLayout, DeviceReadsHeaderAndFrame) {
  NetFixture f(kModern);
  const auto frame = test_frame(1000 - 42, 7);
  ASSERT_EQ(frame.size(), 1000u);
  std::vector<std::uint8_t> partial = frame;
  const auto header = make_checksum_partial(partial);
  ASSERT_TRUE(header.has_value());

  TxOptions opts;
  opts.layout = GetParam().layout;
  opts.indirect = GetParam().indirect;
  opts.chunk = 256;
  ASSERT_TRUE(f.net.send_frame(partial, header, opts)) << f.net.last_error();
  EXPECT_EQ(f.tx_dev.drain_kicks(), 1u);

  ChainError err;
  auto chain = f.tx_dev.pop(&err);
  ASSERT_TRUE(chain.has_value()) << chain_error_name(err);
  EXPECT_EQ(chain->indirect, GetParam().indirect);
  EXPECT_EQ(chain->segments.size(), GetParam().expected_segments);
  for (const auto& s : chain->segments) EXPECT_FALSE(s.writable);
  const auto bytes = chain->readable_bytes();
  ASSERT_EQ(bytes.size(), 12 + frame.size());
  NetHeader h{};
  std::memcpy(&h, bytes.data(), 12);
  EXPECT_EQ(h.flags, NetHeader::kFlagNeedsCsum);
  EXPECT_EQ(h.csum_start, 34);
  EXPECT_EQ(h.csum_offset, 6);
  EXPECT_EQ(h.num_buffers, 0);
  std::vector<std::uint8_t> sent(bytes.begin() + 12, bytes.end());
  EXPECT_EQ(sent, partial);
  // Completing the partial checksum gives back the original frame.
  ASSERT_TRUE(complete_partial_checksum(sent, h.csum_start, h.csum_offset));
  EXPECT_EQ(sent, frame);

  f.tx_dev.push_used(chain->head, 0);
  f.tx_dev.publish_used();
  EXPECT_EQ(f.net.reclaim_tx(), 1u);
  EXPECT_EQ(f.tx.num_free(), 64);
  EXPECT_EQ(f.net.stats().tx_completed, 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, FrontendNetTxLayout,
    ::testing::Values(TxCase{ChainLayout::kSingle, false, 1}, TxCase{ChainLayout::kSingle, true, 1},
                      TxCase{ChainLayout::kHeaderSeparate, false, 2},
                      TxCase{ChainLayout::kHeaderSeparate, true, 2},
                      TxCase{ChainLayout::kScattered, false, 5},  // header + 4 x <=256
                      TxCase{ChainLayout::kScattered, true, 5},
                      TxCase{ChainLayout::kHeaderSplit, false, 2},
                      TxCase{ChainLayout::kHeaderSplit, true, 2}));

TEST(FrontendNetDriver, LegacyHeaderIsTenBytes) {
  NetFixture f(virtio::bit(Feature::kRingIndirectDesc));
  EXPECT_EQ(f.net.header_size(), 10u);
  const auto frame = test_frame(100, 1);
  ASSERT_TRUE(f.net.send_frame(frame));
  auto chain = f.tx_dev.pop();
  ASSERT_TRUE(chain.has_value());
  EXPECT_EQ(chain->readable_bytes().size(), 10 + frame.size());
}

TEST(FrontendNetDriver, TxRefusesWhenRingFullUntilReclaimed) {
  NetFixture f(kModern);
  const auto frame = test_frame(60, 1);
  TxOptions two;  // two descriptors per frame: 32 frames fill 64 descriptors
  two.layout = ChainLayout::kHeaderSeparate;
  two.kick = false;
  for (int i = 0; i < 32; ++i) ASSERT_TRUE(f.net.send_frame(frame, std::nullopt, two));
  EXPECT_FALSE(f.net.send_frame(frame, std::nullopt, two));
  EXPECT_EQ(f.net.stats().tx_no_room, 1u);
  EXPECT_EQ(f.tx_dev.drain_kicks(), 0u);
  EXPECT_TRUE(f.net.kick_tx());
  for (int i = 0; i < 3; ++i) {
    auto c = f.tx_dev.pop();
    ASSERT_TRUE(c.has_value());
    f.tx_dev.push_used(c->head, 0);
  }
  f.tx_dev.publish_used();
  // send_frame reclaims by itself when it runs out of room.
  EXPECT_TRUE(f.net.send_frame(frame, std::nullopt, two));
  EXPECT_EQ(f.net.stats().tx_completed, 3u);
  EXPECT_FALSE(f.net.wait_tx_complete(std::chrono::milliseconds(0)));
}

TEST(FrontendNetDriver, TxFrameLargerThanSlotIsRefused) {
  NetFixture f(kModern);
  const std::vector<std::uint8_t> huge(20000, 1);
  EXPECT_FALSE(f.net.send_frame(huge));
  EXPECT_EQ(f.tx.in_flight(), 0);
}

TEST(FrontendNetDriver, MergeableFrameAcrossBuffers) {
  NetFixture f(kModernMergeable);
  ASSERT_EQ(f.net.post_rx_buffers(8, 512), 8u);
  EXPECT_EQ(f.rx_dev.drain_kicks(), 1u);
  const auto frame = test_frame(1500 - 42, 3);
  NetHeader h{};
  h.flags = NetHeader::kFlagDataValid;
  // 1512 bytes with the header: 512 + 512 + 488.
  ASSERT_EQ(f.rx_dev.deliver_frame(frame, h, 12, true), 3u);
  const auto small = test_frame(20, 4);
  ASSERT_EQ(f.rx_dev.deliver_frame(small, NetHeader{}, 12, true), 1u);
  f.rx_dev.signal_if_needed();

  auto frames = f.net.receive_frames(std::chrono::seconds(1), 2);
  ASSERT_EQ(frames.size(), 2u) << f.net.last_error();
  EXPECT_EQ(frames[0].bytes, frame);
  EXPECT_EQ(frames[0].buffers, 3);
  EXPECT_EQ(frames[0].header.num_buffers, 3);
  EXPECT_EQ(frames[0].header.flags, NetHeader::kFlagDataValid);
  EXPECT_EQ(frames[1].bytes, small);
  EXPECT_EQ(frames[1].buffers, 1);
  EXPECT_EQ(f.net.stats().rx_errors, 0u);
  EXPECT_EQ(f.rx.drain_interrupts(), 1u);  // the device signalled once
  EXPECT_EQ(f.net.rx_interrupts(), 1u);
  // The four used chains were posted again.
  EXPECT_EQ(f.rx.in_flight(), 8);
  EXPECT_EQ(f.net.stats().rx_posted, 12u);
}

TEST(FrontendNetDriver, MergeableFrameSplitAcrossPublishes) {
  NetFixture f(kModernMergeable);
  f.net.set_auto_repost(false);
  ASSERT_EQ(f.net.post_rx_buffers(4, 256), 4u);
  const auto frame = test_frame(400, 9);  // 442 + 12 = 454: two buffers
  // Publish the first buffer alone, then the second.
  auto c1 = f.rx_dev.pop();
  auto c2 = f.rx_dev.pop();
  ASSERT_TRUE(c1 && c2);
  std::vector<std::uint8_t> stream(12 + frame.size());
  NetHeader h{};
  h.num_buffers = 2;
  std::memcpy(stream.data(), &h, 12);
  std::memcpy(stream.data() + 12, frame.data(), frame.size());
  c1->write(std::span<const std::uint8_t>(stream.data(), 256));
  c2->write(std::span<const std::uint8_t>(stream.data() + 256, stream.size() - 256));
  f.rx_dev.push_used(c1->head, 256);
  f.rx_dev.publish_used();
  EXPECT_TRUE(f.net.poll_frames().empty());
  f.rx_dev.push_used(c2->head, static_cast<std::uint32_t>(stream.size() - 256));
  f.rx_dev.publish_used();
  auto frames = f.net.poll_frames();
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].bytes, frame);
  EXPECT_EQ(f.rx.in_flight(), 2);  // auto repost is off
}

struct RxCase {
  ChainLayout layout;
  bool indirect;
};

class FrontendNetRxLayout : public ::testing::TestWithParam<RxCase> {};

TEST_P(FrontendNetRxLayout, NonMergeableFrameInOneChain) {
  NetFixture f(kModern, /*event_idx=*/true);
  RxOptions opts;
  opts.layout = GetParam().layout;
  opts.indirect = GetParam().indirect;
  opts.chunk = 300;
  ASSERT_EQ(f.net.post_rx_buffers(4, 1600, opts), 4u);
  const auto frame = test_frame(1200, 5);
  ASSERT_EQ(f.rx_dev.deliver_frame(frame, NetHeader{}, 12, false), 1u);
  f.rx_dev.signal_if_needed();
  auto frames = f.net.receive_frames(std::chrono::seconds(1));
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].bytes, frame);
  EXPECT_EQ(frames[0].header.num_buffers, 1);
  // A frame larger than one chain does not fit without mergeable buffers.
  const auto big = test_frame(1700, 6);
  EXPECT_EQ(f.rx_dev.deliver_frame(big, NetHeader{}, 12, false), 0u);
}

INSTANTIATE_TEST_SUITE_P(Layouts, FrontendNetRxLayout,
                         ::testing::Values(RxCase{ChainLayout::kSingle, false},
                                           RxCase{ChainLayout::kHeaderSeparate, false},
                                           RxCase{ChainLayout::kScattered, false},
                                           RxCase{ChainLayout::kScattered, true},
                                           RxCase{ChainLayout::kHeaderSplit, true}));

TEST(FrontendNetDriver, MalformedUsedEntriesAreCounted) {
  NetFixture f(kModernMergeable);
  f.net.set_auto_repost(false);
  ASSERT_EQ(f.net.post_rx_buffers(4, 256), 4u);
  // Length beyond the chain.
  auto c = f.rx_dev.pop();
  NetHeader h{};
  h.num_buffers = 1;
  c->write(std::span<const std::uint8_t>(reinterpret_cast<std::uint8_t*>(&h), 12));
  f.rx_dev.push_used(c->head, 9999);
  // num_buffers 0.
  c = f.rx_dev.pop();
  h.num_buffers = 0;
  c->write(std::span<const std::uint8_t>(reinterpret_cast<std::uint8_t*>(&h), 12));
  f.rx_dev.push_used(c->head, 60);
  // Shorter than the header.
  c = f.rx_dev.pop();
  f.rx_dev.push_used(c->head, 4);
  f.rx_dev.publish_used();
  auto frames = f.net.poll_frames();
  EXPECT_EQ(frames.size(), 1u);  // the over-long one, truncated to its chain
  EXPECT_EQ(f.net.stats().rx_errors, 3u);
}

TEST(FrontendNetDriver, ReceiveTimesOutWithoutFrames) {
  NetFixture f(kModernMergeable);
  ASSERT_EQ(f.net.post_rx_buffers(2, 2048), 2u);
  EXPECT_TRUE(f.net.receive_frames(std::chrono::milliseconds(30)).empty());
}

}  // namespace
}  // namespace xdpvhost::testing
