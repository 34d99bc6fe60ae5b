// The mailbox between two service threads: frames in order, a full mailbox
// refuses more, and a frame its destination cannot take yet stays in it (in
// front of every later one) until a later drain takes it.

#include "dataplane/mailbox.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace xdpvhost::dataplane {
namespace {

// A 60-byte frame whose first byte is `tag`.
struct TaggedFrame {
  explicit TaggedFrame(std::uint8_t tag) : bytes(60, tag) {}
  Frame frame() const {
    span = Span{bytes.data(), static_cast<std::uint32_t>(bytes.size())};
    return Frame(span);
  }
  std::vector<std::uint8_t> bytes;
  mutable Span span{};
};

TEST(Mailbox, AFrameItsDestinationCannotTakeYetStaysInFrontUntilTaken) {
  Mailbox box;
  for (std::uint8_t tag = 1; tag <= 4; ++tag) ASSERT_TRUE(box.push(tag, TaggedFrame(tag).frame()));
  std::vector<std::uint32_t> taken;
  bool full = true;  // the destination of frame 2 is full
  auto take = [&](std::uint32_t port, const Frame& frame) {
    if (port == 2 && full) return false;
    EXPECT_EQ(frame.spans[0].data[0], port);
    taken.push_back(port);
    return true;
  };
  EXPECT_EQ(box.drain(64, take), 1u);
  EXPECT_EQ(taken, (std::vector<std::uint32_t>{1}));
  EXPECT_EQ(box.drain(64, take), 0u) << "frame 2 is still first";
  EXPECT_EQ(box.free_slots(), Mailbox::kSlots - 3);
  full = false;
  EXPECT_EQ(box.drain(64, take), 3u);
  EXPECT_EQ(taken, (std::vector<std::uint32_t>{1, 2, 3, 4}));
  EXPECT_TRUE(box.empty());
}

TEST(Mailbox, AFlowHashTheSenderComputedCrossesWithTheFrame) {
  Mailbox box;
  const TaggedFrame hashed(1), plain(2);
  const Frame sent = hashed.frame();
  sent.flow_hash_value = 0xdeadbeef;  // as flow_hash() keeps it
  sent.flow_hash_known = true;
  ASSERT_TRUE(box.push(1, sent));
  ASSERT_TRUE(box.push(2, plain.frame()));
  std::vector<std::pair<bool, std::uint32_t>> got;
  box.drain(64, [&](std::uint32_t, const Frame& f) {
    got.emplace_back(f.flow_hash_known, f.flow_hash_value);
    return true;
  });
  EXPECT_EQ(got, (std::vector<std::pair<bool, std::uint32_t>>{{true, 0xdeadbeef}, {false, 0}}));
}

TEST(Mailbox, AMailboxWhoseFramesWaitFillsAndRefusesTheSender) {
  Mailbox box;
  const TaggedFrame f(7);
  for (std::uint32_t i = 0; i < Mailbox::kSlots; ++i) ASSERT_TRUE(box.push(7, f.frame()));
  EXPECT_FALSE(box.push(7, f.frame()));
  EXPECT_EQ(box.drain(64, [](std::uint32_t, const Frame&) { return false; }), 0u);
  EXPECT_FALSE(box.push(7, f.frame())) << "nothing was taken, nothing fits";
  EXPECT_EQ(box.drain(1, [](std::uint32_t, const Frame&) { return true; }), 1u);
  EXPECT_TRUE(box.push(7, f.frame()));
}

// Frames of every length up to 64 KiB, pushed until the mailbox refuses and
// drained a few at a time, thousands of times round the byte ring: each
// arrives whole, in order, with its own bytes (none overwritten by a later
// one), and a refused push is a full mailbox (slots or contiguous bytes).
TEST(Mailbox, FramesUpTo64KibTravelWholeInOrderAsTheByteRingWraps) {
  Mailbox box;
  std::vector<std::uint8_t> bytes(Mailbox::kMaxFrame);
  std::uint32_t pushed = 0, drained = 0, refused = 0;
  std::uint32_t seed = 12345;
  auto next_len = [&] {
    seed = seed * 1103515245u + 12345u;
    const std::uint32_t r = seed >> 8;
    return r % 4 == 0 ? Mailbox::kMaxFrame - r % 4096 : 60 + r % 9000;
  };
  std::vector<std::uint32_t> in_flight;
  std::uint64_t bytes_through = 0;
  while (bytes_through < std::uint64_t{64} * Mailbox::kBytes) {
    const std::uint32_t len = next_len();
    const auto tag = static_cast<std::uint8_t>(pushed);
    std::fill(bytes.begin(), bytes.begin() + len, tag);
    const Span span{bytes.data(), len};
    if (box.push(len, Frame(span))) {
      in_flight.push_back(len);
      ++pushed;
      bytes_through += len;
      continue;
    }
    ++refused;
    std::size_t used = 0;
    for (const std::uint32_t l : in_flight) used += l;
    ASSERT_TRUE(box.free_slots() == 0 || used + len > Mailbox::kBytes / 2)
        << "refused with " << box.free_slots() << " slots and " << used << " bytes in use";
    const unsigned take = 1 + (seed >> 4) % 7;
    const unsigned got = box.drain(take, [&](std::uint32_t port, const Frame& frame) {
      EXPECT_EQ(port, in_flight.front());
      EXPECT_EQ(frame.len, port);  // the port id carries the length
      EXPECT_EQ(frame.span_count, 1u);
      const auto want = static_cast<std::uint8_t>(drained);
      const std::uint8_t* d = frame.spans[0].data;
      EXPECT_TRUE(d[0] == want && d[frame.len / 2] == want && d[frame.len - 1] == want)
          << "frame " << drained << " overwritten";
      in_flight.erase(in_flight.begin());
      ++drained;
      return true;
    });
    ASSERT_GT(got, 0u);
  }
  EXPECT_GT(refused, 100u) << "the mailbox was never full";
  box.drain(Mailbox::kSlots, [&](std::uint32_t, const Frame&) {
    ++drained;
    return true;
  });
  EXPECT_EQ(drained, pushed);
  EXPECT_TRUE(box.empty());
}

TEST(Mailbox, AFrameLongerThanAnyPortTakesIsRefused) {
  Mailbox box;
  std::vector<std::uint8_t> bytes(Mailbox::kMaxFrame + 1, 1);
  const Span span{bytes.data(), static_cast<std::uint32_t>(bytes.size())};
  EXPECT_FALSE(box.push(1, Frame(span)));
  EXPECT_TRUE(box.empty());
}

}  // namespace
}  // namespace xdpvhost::dataplane
