#include "virtio/split_queue.hpp"

#include <gtest/gtest.h>

#include "test_ring.hpp"

namespace xdpvhost::virtio {
namespace {

using test::TestRing;
using Dir = SplitQueue::Direction;
constexpr auto kNext = Descriptor::kFlagNext;
constexpr auto kWrite = Descriptor::kFlagWrite;
constexpr auto kIndirect = Descriptor::kFlagIndirect;

struct SplitQueueTest : ::testing::Test {
  TestRing ring{8};
  SplitQueue q;
  DescriptorChain chain;
  void attach(bool event_idx = false) {
    auto c = ring.config();
    c.event_idx = event_idx;
    ASSERT_EQ(q.attach(ring.memory, c), QueueError::kNone);
  }
  // The descriptors of the indirect table at `gpa`, to fill in.
  Descriptor* entries(std::uint64_t gpa) { return reinterpret_cast<Descriptor*>(ring.host(gpa)); }
  // An indirect table of `n` readable 4-byte descriptors chained 0, 1, ...;
  // returns its address.
  std::uint64_t chained_table(std::uint16_t n) {
    const auto gpa = ring.alloc(n * 16);
    for (std::uint16_t i = 0; i < n; ++i)
      entries(gpa)[i] = {ring.alloc(4), 4, static_cast<std::uint16_t>(i + 1 < n ? kNext : 0),
                         static_cast<std::uint16_t>(i + 1)};
    return gpa;
  }
  // Descriptors 0 .. n-1 each a one-descriptor readable chain of 8 bytes,
  // made available in that order.
  void publish_single_buffers(std::uint16_t n) {
    for (std::uint16_t i = 0; i < n; ++i) {
      ring.set_desc(i, ring.alloc(8), 8, 0);
      ring.publish(i);
    }
  }
  void expect_broken(QueueError e, Dir dir = Dir::kDeviceReads) {
    EXPECT_FALSE(q.pop(chain, dir));
    EXPECT_TRUE(q.broken());
    EXPECT_EQ(q.error(), e) << to_string(q.error());
    // Stays broken: nothing more is read from the ring.
    ring.publish(0);
    EXPECT_FALSE(q.pop(chain, dir));
    EXPECT_EQ(q.available(), 0);
  }
};

TEST_F(SplitQueueTest, PopsADirectChainSplitIntoReadableAndWritable) {
  attach();
  const auto a = ring.alloc(100), b = ring.alloc(50), c = ring.alloc(70);
  ring.set_desc(0, a, 100, kNext, 3);
  ring.set_desc(3, b, 50, kNext, 5);
  ring.set_desc(5, c, 70, kWrite);
  ring.publish(0);
  // Mixed chains are refused in one direction but the walk order is checked:
  ASSERT_EQ(q.available(), 1);
  SplitQueue q2;
  ASSERT_EQ(q2.attach(ring.memory, ring.config()), QueueError::kNone);
  EXPECT_FALSE(q2.pop(chain, Dir::kDeviceReads));
  EXPECT_EQ(q2.error(), QueueError::kUnexpectedWritable);

  ring.set_desc(5, c, 70, 0);
  ASSERT_TRUE(q.pop(chain, Dir::kDeviceReads));
  EXPECT_EQ(chain.head, 0);
  EXPECT_EQ(chain.readable_bytes, 220u);
  ASSERT_EQ(chain.readable.size(), 3u);
  EXPECT_EQ(chain.readable[0].data, ring.host(a));
  EXPECT_EQ(chain.readable[1].len, 50u);
  EXPECT_EQ(q.last_avail_idx(), 1);
  EXPECT_EQ(q.available(), 0);
}

TEST_F(SplitQueueTest, PopsAnIndirectTable) {
  attach();
  const auto table = ring.alloc(3 * 16);
  auto* t = entries(table);
  const auto a = ring.alloc(10), b = ring.alloc(20), c = ring.alloc(30);
  t[0] = {a, 10, kNext | kWrite, 2};
  t[2] = {b, 20, kNext | kWrite, 1};
  t[1] = {c, 30, kWrite, 0};
  ring.set_desc(4, table, 3 * 16, kIndirect);
  ring.publish(4);
  ASSERT_TRUE(q.pop(chain, Dir::kDeviceWrites));
  EXPECT_EQ(chain.head, 4);
  EXPECT_EQ(chain.writable_bytes, 60u);
  ASSERT_EQ(chain.writable.size(), 3u);
  EXPECT_EQ(chain.writable[2].data, ring.host(c));
}

TEST_F(SplitQueueTest, DirectDescriptorsBeforeAnIndirectOne) {
  attach();
  const auto table = ring.alloc(16);
  auto* t = entries(table);
  t[0] = {ring.alloc(8), 8, 0, 0};
  ring.set_desc(0, ring.alloc(12), 12, kNext, 1);
  ring.set_desc(1, table, 16, kIndirect);
  ring.publish(0);
  ASSERT_TRUE(q.pop(chain, Dir::kDeviceReads));
  EXPECT_EQ(chain.readable_bytes, 20u);
}

TEST_F(SplitQueueTest, LoopBreaksTheQueue) {
  attach();
  ring.set_desc(0, ring.alloc(8), 8, kNext, 1);
  ring.set_desc(1, ring.alloc(8), 8, kNext, 0);
  ring.publish(0);
  expect_broken(QueueError::kDescriptorLoop);
}

TEST_F(SplitQueueTest, SelfLoopBreaksTheQueue) {
  attach();
  ring.set_desc(2, ring.alloc(8), 8, kNext, 2);
  ring.publish(2);
  expect_broken(QueueError::kDescriptorLoop);
}

TEST_F(SplitQueueTest, LoopInsideAnIndirectTable) {
  attach();
  const auto table = ring.alloc(2 * 16);
  auto* t = entries(table);
  t[0] = {ring.alloc(8), 8, kNext, 1};
  t[1] = {ring.alloc(8), 8, kNext, 0};
  ring.set_desc(0, table, 32, kIndirect);
  ring.publish(0);
  expect_broken(QueueError::kDescriptorLoop);
}

TEST_F(SplitQueueTest, ChainLongerThanTheRing) {
  attach();
  // One direct descriptor plus an indirect table as long as the ring: 9 > 8.
  ring.set_desc(0, ring.alloc(4), 4, kNext, 1);
  ring.set_desc(1, chained_table(8), 8 * 16, kIndirect);
  ring.publish(0);
  expect_broken(QueueError::kChainTooLong);
}

TEST_F(SplitQueueTest, IndirectTableAsLongAsTheRingIsFine) {
  attach();
  ring.set_desc(0, chained_table(8), 8 * 16, kIndirect);
  ring.publish(0);
  ASSERT_TRUE(q.pop(chain, Dir::kDeviceReads)) << to_string(q.error());
  EXPECT_EQ(chain.readable_bytes, 32u);
}

TEST_F(SplitQueueTest, IndirectTableBiggerThanTheRing) {
  attach();
  const auto table = ring.alloc(9 * 16);
  ring.set_desc(0, table, 9 * 16, kIndirect);
  ring.publish(0);
  expect_broken(QueueError::kIndirectLength);
}

TEST_F(SplitQueueTest, NestedIndirect) {
  attach();
  const auto inner = ring.alloc(16);
  const auto outer = ring.alloc(16);
  entries(inner)[0] = {ring.alloc(8), 8, 0, 0};
  entries(outer)[0] = {inner, 16, kIndirect, 0};
  ring.set_desc(0, outer, 16, kIndirect);
  ring.publish(0);
  expect_broken(QueueError::kNestedIndirect);
}

TEST_F(SplitQueueTest, IndirectLengthNotAMultipleOf16) {
  attach();
  ring.set_desc(0, ring.alloc(24), 24, kIndirect);
  ring.publish(0);
  expect_broken(QueueError::kIndirectLength);
}

TEST_F(SplitQueueTest, IndirectLengthZero) {
  attach();
  ring.set_desc(0, ring.alloc(16), 0, kIndirect);
  ring.publish(0);
  expect_broken(QueueError::kIndirectLength);
}

TEST_F(SplitQueueTest, IndirectWithNext) {
  attach();
  ring.set_desc(0, ring.alloc(16), 16, kIndirect | kNext, 1);
  ring.publish(0);
  expect_broken(QueueError::kIndirectWithNext);
}

TEST_F(SplitQueueTest, IndirectTableOutsideMemory) {
  attach();
  ring.set_desc(0, TestRing::kBase + TestRing::kSize - 8, 16, kIndirect);
  ring.publish(0);
  expect_broken(QueueError::kBufferOutOfRange);
}

TEST_F(SplitQueueTest, BufferOutsideMemory) {
  attach();
  ring.set_desc(0, 0x10, 64, 0);
  ring.publish(0);
  expect_broken(QueueError::kBufferOutOfRange);
}

TEST_F(SplitQueueTest, BufferCrossingTheEndOfMemory) {
  attach();
  ring.set_desc(0, TestRing::kBase + TestRing::kSize - 10, 20, 0);
  ring.publish(0);
  expect_broken(QueueError::kBufferOutOfRange);
}

TEST_F(SplitQueueTest, BufferAddressThatWrapsAround) {
  attach();
  ring.set_desc(0, ~std::uint64_t{0} - 4, 64, 0);
  ring.publish(0);
  expect_broken(QueueError::kBufferOutOfRange);
}

TEST_F(SplitQueueTest, NextOutOfRange) {
  attach();
  ring.set_desc(0, ring.alloc(8), 8, kNext, 8);
  ring.publish(0);
  expect_broken(QueueError::kNextOutOfRange);
}

TEST_F(SplitQueueTest, HeadOutOfRange) {
  attach();
  ring.publish(8);
  expect_broken(QueueError::kHeadOutOfRange);
}

TEST_F(SplitQueueTest, AvailIndexJumpingMoreThanTheRing) {
  attach();
  ring.set_avail_idx(9);
  EXPECT_EQ(q.available(), 0);
  EXPECT_EQ(q.error(), QueueError::kAvailIndexJump);
}

TEST_F(SplitQueueTest, AvailIndexAWholeRingAheadAfterUnpopBreaks) {
  attach();
  publish_single_buffers(3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(q.pop(chain, Dir::kDeviceReads));
  // The driver now claims a whole ring beyond what we popped (legal as seen
  // from there) ...
  ring.set_avail_idx(3 + 8);
  EXPECT_EQ(q.available(), 8);
  // ... but giving back the three makes it more than a ring.
  q.unpop(3);
  EXPECT_EQ(q.available(), 0);
  EXPECT_EQ(q.error(), QueueError::kAvailIndexJump);
}

TEST_F(SplitQueueTest, AvailIndexOfExactlyTheRingIsFine) {
  attach();
  publish_single_buffers(8);
  EXPECT_EQ(q.available(), 8);
  EXPECT_FALSE(q.broken());
}

TEST_F(SplitQueueTest, AvailIndexWrapsAround16Bits) {
  ASSERT_EQ(q.attach(ring.memory, ring.config(65534)), QueueError::kNone);
  ring.set_avail_idx(65534);
  publish_single_buffers(4);
  EXPECT_EQ(q.available(), 4);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(q.pop(chain, Dir::kDeviceReads));
  EXPECT_EQ(q.last_avail_idx(), 2);
}

TEST_F(SplitQueueTest, ReadableInAReceiveChain) {
  attach();
  ring.set_desc(0, ring.alloc(8), 8, 0);
  ring.publish(0);
  expect_broken(QueueError::kUnexpectedReadable, Dir::kDeviceWrites);
}

TEST_F(SplitQueueTest, RingOutsideMemoryIsRefusedAtAttach) {
  auto c = ring.config();
  c.used_uva = TestRing::kBase + TestRing::kSize - 8;
  EXPECT_EQ(q.attach(ring.memory, c), QueueError::kRingAddress);
  EXPECT_FALSE(q.usable());
}

TEST_F(SplitQueueTest, MisalignedRingIsRefused) {
  auto c = ring.config();
  c.desc_uva += 8;
  EXPECT_EQ(q.attach(ring.memory, c), QueueError::kRingMisaligned);
}

TEST_F(SplitQueueTest, SizeMustBeAPowerOfTwo) {
  auto c = ring.config();
  c.size = 6;
  EXPECT_EQ(q.attach(ring.memory, c), QueueError::kRingSize);
  c.size = 0;
  EXPECT_EQ(q.attach(ring.memory, c), QueueError::kRingSize);
  c.size = 65536;
  EXPECT_EQ(q.attach(ring.memory, c), QueueError::kRingSize);
}

TEST_F(SplitQueueTest, UsedEntriesBecomeVisibleOnlyAtPublish) {
  attach();
  q.add_used(3, 100);
  q.add_used(5, 0);
  EXPECT_EQ(ring.used_idx(), 0);
  EXPECT_EQ(q.staged_used(), 2);
  q.publish_used();
  EXPECT_EQ(ring.used_idx(), 2);
  EXPECT_EQ(ring.used(0).id, 3u);
  EXPECT_EQ(ring.used(0).len, 100u);
  EXPECT_EQ(ring.used(1).id, 5u);
  EXPECT_EQ(q.staged_used(), 0);
}

TEST_F(SplitQueueTest, NoInterruptFlagSuppressesSignals) {
  attach();
  q.add_used(0, 0);
  q.publish_used();
  EXPECT_TRUE(q.should_signal());
  EXPECT_FALSE(q.should_signal()) << "nothing new was published";
  ring.set_avail_flags(kAvailFlagNoInterrupt);
  q.add_used(1, 0);
  q.publish_used();
  EXPECT_FALSE(q.should_signal());
}

TEST_F(SplitQueueTest, EventIndexSignalsOnlyPastUsedEvent) {
  attach(/*event_idx=*/true);
  // First decision always signals (no previous signal to compare with).
  q.add_used(0, 0);
  q.publish_used();
  EXPECT_TRUE(q.should_signal());
  // The driver wants to hear when used idx passes 3.
  ring.set_used_event(3);
  q.add_used(1, 0);
  q.publish_used();  // used idx 2
  EXPECT_FALSE(q.should_signal());
  q.add_used(2, 0);
  q.add_used(3, 0);
  q.publish_used();  // used idx 4: crossed 3 since the last decision
  EXPECT_TRUE(q.should_signal());
  q.add_used(4, 0);
  q.publish_used();  // 5: used_event still 3, already signalled past it
  EXPECT_FALSE(q.should_signal());
}

TEST_F(SplitQueueTest, NotificationsWithoutEventIndexUseTheUsedFlag) {
  attach();
  q.disable_notifications();
  EXPECT_EQ(ring.used_flags() & kUsedFlagNoNotify, kUsedFlagNoNotify);
  EXPECT_FALSE(q.enable_notifications());
  EXPECT_EQ(ring.used_flags() & kUsedFlagNoNotify, 0);
  publish_single_buffers(1);
  EXPECT_TRUE(q.enable_notifications()) << "work arrived: the caller must not sleep";
}

TEST_F(SplitQueueTest, NotificationsWithEventIndexSetAvailEvent) {
  attach(/*event_idx=*/true);
  publish_single_buffers(1);
  ASSERT_TRUE(q.pop(chain, Dir::kDeviceReads));
  EXPECT_FALSE(q.enable_notifications());
  EXPECT_EQ(ring.avail_event(), 1) << "kick me when the driver adds entry 1";
}

TEST_F(SplitQueueTest, UnpopGivesChainsBack) {
  attach();
  ring.set_desc(0, ring.alloc(8), 8, kWrite);
  ring.set_desc(1, ring.alloc(8), 8, kWrite);
  ring.publish(0);
  ring.publish(1);
  ASSERT_TRUE(q.pop(chain, Dir::kDeviceWrites));
  ASSERT_TRUE(q.pop(chain, Dir::kDeviceWrites));
  q.unpop(2);
  EXPECT_EQ(q.available(), 2);
  ASSERT_TRUE(q.pop(chain, Dir::kDeviceWrites));
  EXPECT_EQ(chain.head, 0);
}

TEST_F(SplitQueueTest, UsedIndexIsTakenFromTheRingAtAttach) {
  attach();
  q.add_used(0, 0);
  q.add_used(1, 0);
  q.publish_used();
  q.detach();
  attach();
  q.add_used(2, 0);
  q.publish_used();
  EXPECT_EQ(ring.used_idx(), 3);
}

}  // namespace
}  // namespace xdpvhost::virtio
