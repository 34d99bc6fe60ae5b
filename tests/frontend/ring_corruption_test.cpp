// Each corruption helper produces exactly the malformation it names, as seen
// by a validating device-side reader, and leaves the queue's memory otherwise
// intact.

#include <gtest/gtest.h>

#include <functional>

#include "frontend/loopback_device.hpp"
#include "frontend/ring_corruption.hpp"

namespace xdpvhost::testing {
namespace {

struct CorruptionCase {
  const char* name;
  std::function<void(DriverQueue&)> corrupt;
  ChainError expected;
};

class FrontendRingCorruption : public ::testing::TestWithParam<CorruptionCase> {};

TEST_P(FrontendRingCorruption, DeviceSeesTheNamedError) {
  for (bool two_regions : {false, true}) {
    for (std::uint16_t vring : {0, 1}) {  // RX (device writes) and TX (device reads)
      GuestMemoryArena memory(ArenaOptions{.size = 8u << 20, .two_regions = two_regions});
      DriverQueue q(memory, vring, DriverQueueOptions{16, false, 8});
      LoopbackDevice device(memory, q);
      // A valid chain first: the corruption must not disturb it.
      const std::uint64_t buf = memory.allocate(64);
      const BufferSegment seg{buf, 64, vring == 0};
      ASSERT_TRUE(q.add_chain(std::span<const BufferSegment>(&seg, 1)).has_value());
      ASSERT_TRUE(device.pop().has_value());

      GetParam().corrupt(q);
      ChainError err = ChainError::kNone;
      EXPECT_FALSE(device.pop(&err).has_value());
      EXPECT_EQ(err, GetParam().expected) << "got " << chain_error_name(err) << ", two_regions "
                                          << two_regions << " vring " << vring;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Helpers, FrontendRingCorruption,
    ::testing::Values(
        CorruptionCase{"loop", [](DriverQueue& q) { publish_descriptor_loop(q); },
                       ChainError::kLoop},
        CorruptionCase{"cycle", [](DriverQueue& q) { publish_ring_cycle(q); }, ChainError::kLoop},
        CorruptionCase{"longer_than_ring",
                       [](DriverQueue& q) { publish_indirect_chain_longer_than_ring(q); },
                       ChainError::kTooLong},
        CorruptionCase{"nested_indirect", [](DriverQueue& q) { publish_nested_indirect(q); },
                       ChainError::kNestedIndirect},
        CorruptionCase{"indirect_len_17", [](DriverQueue& q) { publish_indirect_bad_length(q); },
                       ChainError::kIndirectBadLength},
        CorruptionCase{"indirect_len_0", [](DriverQueue& q) { publish_indirect_bad_length(q, 0); },
                       ChainError::kIndirectBadLength},
        CorruptionCase{"indirect_table_outside",
                       [](DriverQueue& q) { publish_indirect_table_outside_memory(q); },
                       ChainError::kOutOfBounds},
        CorruptionCase{
            "past_end",
            [](DriverQueue& q) { publish_address_outside_memory(q, OutsideMemory::kPastEnd); },
            ChainError::kOutOfBounds},
        CorruptionCase{
            "in_hole",
            [](DriverQueue& q) { publish_address_outside_memory(q, OutsideMemory::kInHole); },
            ChainError::kOutOfBounds},
        CorruptionCase{
            "straddles_end",
            [](DriverQueue& q) { publish_address_outside_memory(q, OutsideMemory::kStraddlesEnd); },
            ChainError::kOutOfBounds},
        CorruptionCase{
            "huge_length",
            [](DriverQueue& q) { publish_address_outside_memory(q, OutsideMemory::kHugeLength); },
            ChainError::kOutOfBounds},
        CorruptionCase{
            "wraps_around",
            [](DriverQueue& q) { publish_address_outside_memory(q, OutsideMemory::kWrapsAround); },
            ChainError::kOutOfBounds},
        CorruptionCase{"index_jump", [](DriverQueue& q) { publish_avail_index_jump(q); },
                       ChainError::kIndexJump},
        CorruptionCase{"head_out_of_range", [](DriverQueue& q) { publish_head_out_of_range(q); },
                       ChainError::kHeadOutOfRange},
        CorruptionCase{"indirect_with_next", [](DriverQueue& q) { publish_indirect_with_next(q); },
                       ChainError::kIndirectWithNext},
        CorruptionCase{"next_out_of_range", [](DriverQueue& q) { publish_next_out_of_range(q); },
                       ChainError::kNextOutOfRange},
        CorruptionCase{"readable_after_writable",
                       [](DriverQueue& q) { publish_readable_after_writable(q); },
                       ChainError::kReadableAfterWritable}),
    [](const ::testing::TestParamInfo<CorruptionCase>& info) { return info.param.name; });

TEST(FrontendRingCorruptionHelpers, DoNotKick) {
  GuestMemoryArena memory(ArenaOptions{.size = 4u << 20});
  DriverQueue q(memory, 1, DriverQueueOptions{16, false, 8});
  ASSERT_TRUE(publish_descriptor_loop(q).has_value());
  EXPECT_EQ(q.kicks_sent(), 0u);
  EXPECT_EQ(q.kick_fd().drain(), 0u);
  q.notify();
  EXPECT_EQ(q.kick_fd().drain(), 1u);
}

}  // namespace
}  // namespace xdpvhost::testing
