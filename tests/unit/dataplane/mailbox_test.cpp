// The mailbox between two service threads: frames in order, a full mailbox
// refuses more, and a frame its destination cannot take yet stays in it (in
// front of every later one) until a later drain takes it.

#include "dataplane/mailbox.hpp"

#include <gtest/gtest.h>

#include <cstdint>
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

}  // namespace
}  // namespace xdpvhost::dataplane
