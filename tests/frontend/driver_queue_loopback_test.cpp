// The driver side of split virtqueues (DriverQueue) against a device-side
// reader over the same guest memory: chains, indirect tables, free list,
// kick suppression, interrupt requests, 16-bit index wrap.

#include <gtest/gtest.h>

#include <vector>

#include "frontend/driver_queue.hpp"
#include "frontend/guest_memory_arena.hpp"
#include "frontend/loopback_device.hpp"

namespace xdpvhost::testing {
namespace {

using virtio::Descriptor;

struct Fixture {
  explicit Fixture(bool event_idx, std::uint16_t size = 16, bool two_regions = true)
      : memory(ArenaOptions{.size = 8u << 20, .two_regions = two_regions}),
        queue(memory, 1, DriverQueueOptions{size, event_idx, 8}),
        device(memory, queue) {}
  GuestMemoryArena memory;
  DriverQueue queue;
  LoopbackDevice device;
};

std::vector<BufferSegment> segments(GuestMemoryArena& mem,
                                    std::initializer_list<std::uint32_t> lens,
                                    std::size_t writable_from = 99) {
  std::vector<BufferSegment> out;
  std::size_t i = 0;
  for (std::uint32_t len : lens) {
    const std::uint64_t gpa = mem.allocate(len, 64);
    std::uint8_t* p = mem.host(gpa, len);
    for (std::uint32_t b = 0; b < len; ++b) p[b] = static_cast<std::uint8_t>(i * 31 + b);
    out.push_back({gpa, len, i >= writable_from});
    ++i;
  }
  return out;
}

TEST(FrontendDriverQueue, RingsAreReachableThroughUserAddressesNotGpas) {
  Fixture f(false);
  const auto uva = f.memory.user_addr_of(f.queue.desc_gpa());
  ASSERT_TRUE(uva.has_value());
  EXPECT_NE(*uva, f.queue.desc_gpa());
  EXPECT_EQ(f.memory.host_from_user_addr(*uva), f.memory.host(f.queue.desc_gpa()));
  // A gpa used as a user address must not translate (the backend would be wrong).
  EXPECT_EQ(f.memory.host_from_user_addr(f.queue.desc_gpa()), nullptr);
}

TEST(FrontendDriverQueue, DirectChainSeenByDeviceAndReturned) {
  Fixture f(false);
  auto segs = segments(f.memory, {12, 100, 7, 300}, 2);
  auto head = f.queue.add_chain(segs);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(f.queue.num_free(), 16 - 4);
  EXPECT_EQ(f.queue.in_flight(), 1);

  ChainError err;
  auto chain = f.device.pop(&err);
  ASSERT_TRUE(chain.has_value()) << chain_error_name(err);
  EXPECT_EQ(chain->head, *head);
  EXPECT_FALSE(chain->indirect);
  ASSERT_EQ(chain->segments.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(chain->segments[i].data, f.memory.host(segs[i].gpa));
    EXPECT_EQ(chain->segments[i].len, segs[i].len);
    EXPECT_EQ(chain->segments[i].writable, i >= 2);
  }
  EXPECT_EQ(chain->readable_bytes().size(), 112u);

  f.device.push_used(chain->head, 307);
  f.device.publish_used();
  auto used = f.queue.get_used();
  ASSERT_TRUE(used.has_value());
  EXPECT_EQ(used->id, *head);
  EXPECT_EQ(used->len, 307u);
  ASSERT_EQ(used->segments.size(), 4u);
  EXPECT_EQ(used->segments[3].gpa, segs[3].gpa);
  EXPECT_EQ(f.queue.num_free(), 16);
  EXPECT_EQ(f.queue.in_flight(), 0);
  EXPECT_FALSE(f.queue.get_used().has_value());
}

TEST(FrontendDriverQueue, IndirectChainTakesOneDescriptor) {
  Fixture f(false);
  auto segs = segments(f.memory, {12, 64, 64, 64, 64}, 0);
  auto head = f.queue.add_inbuf(segs, /*indirect=*/true);
  ASSERT_TRUE(head.has_value());
  EXPECT_EQ(f.queue.num_free(), 15);
  const Descriptor& d = f.queue.descriptors()[*head];
  EXPECT_EQ(d.flags, Descriptor::kFlagIndirect);
  EXPECT_EQ(d.len, 5u * 16);

  ChainError err;
  auto chain = f.device.pop(&err);
  ASSERT_TRUE(chain.has_value()) << chain_error_name(err);
  EXPECT_TRUE(chain->indirect);
  ASSERT_EQ(chain->segments.size(), 5u);
  EXPECT_EQ(chain->writable_capacity(), 12u + 4 * 64);

  // More segments than the per-head table holds get a table of their own.
  auto big = segments(f.memory, {8, 8, 8, 8, 8, 8, 8, 8, 8, 8}, 99);
  ASSERT_TRUE(f.queue.add_outbuf(big, true).has_value());
  auto chain2 = f.device.pop(&err);
  ASSERT_TRUE(chain2.has_value()) << chain_error_name(err);
  EXPECT_EQ(chain2->segments.size(), 10u);
  EXPECT_EQ(chain2->readable_bytes().size(), 80u);
}

TEST(FrontendDriverQueue, FreeListRunsOutAndRefills) {
  Fixture f(false, 4);
  auto seg = segments(f.memory, {64});
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(f.queue.add_outbuf(seg).has_value());
  EXPECT_FALSE(f.queue.add_outbuf(seg).has_value());
  auto two = segments(f.memory, {64, 64});
  auto chain = f.device.pop();
  ASSERT_TRUE(chain.has_value());
  f.device.push_used(chain->head, 0);
  f.device.publish_used();
  ASSERT_TRUE(f.queue.get_used().has_value());
  EXPECT_FALSE(f.queue.add_outbuf(two).has_value());  // needs two, one free
  EXPECT_TRUE(f.queue.add_outbuf(seg).has_value());
}

TEST(FrontendDriverQueue, UsedElementNotInFlightIsCountedAndSkipped) {
  Fixture f(false);
  auto seg = segments(f.memory, {64});
  auto head = f.queue.add_outbuf(seg);
  ASSERT_TRUE(head.has_value());
  auto chain = f.device.pop();
  ASSERT_TRUE(chain.has_value());
  f.device.push_used(static_cast<std::uint16_t>(*head + 5), 0);  // never posted
  f.device.push_used(chain->head, 0);
  f.device.publish_used();
  auto used = f.queue.get_used();
  ASSERT_TRUE(used.has_value());
  EXPECT_EQ(used->id, *head);
  EXPECT_EQ(f.queue.device_errors(), 1u);
}

TEST(FrontendDriverQueue, NoNotifyFlagSuppressesKicks) {
  Fixture f(false);
  auto seg = segments(f.memory, {64});
  ASSERT_TRUE(f.queue.add_outbuf(seg));
  EXPECT_TRUE(f.queue.kick());
  f.device.set_no_notify(true);
  ASSERT_TRUE(f.queue.add_outbuf(seg));
  EXPECT_FALSE(f.queue.kick());
  f.device.set_no_notify(false);
  ASSERT_TRUE(f.queue.add_outbuf(seg));
  EXPECT_TRUE(f.queue.kick());
  EXPECT_EQ(f.queue.kicks_sent(), 2u);
  EXPECT_EQ(f.queue.kicks_suppressed(), 1u);
  EXPECT_EQ(f.device.drain_kicks(), 2u);
}

TEST(FrontendDriverQueue, AvailEventDecidesKicksWithEventIdx) {
  Fixture f(true);
  auto seg = segments(f.memory, {64});
  // The device asks to be kicked once the avail index passes 2 (i.e. when
  // the entry at index 2 is published).
  f.device.set_avail_event(2);
  ASSERT_TRUE(f.queue.add_outbuf(seg));  // idx 1
  EXPECT_FALSE(f.queue.kick());
  ASSERT_TRUE(f.queue.add_outbuf(seg));  // idx 2
  EXPECT_FALSE(f.queue.kick());
  ASSERT_TRUE(f.queue.add_outbuf(seg));  // idx 3: crossed 2
  EXPECT_TRUE(f.queue.kick());
  // Several adds before one kick: a crossing anywhere in the batch kicks.
  f.device.set_avail_event(4);
  ASSERT_TRUE(f.queue.add_outbuf(seg));  // 4
  ASSERT_TRUE(f.queue.add_outbuf(seg));  // 5
  EXPECT_TRUE(f.queue.kick());
  // The NO_NOTIFY flag means nothing under EVENT_IDX.
  f.device.set_no_notify(true);
  f.device.set_avail_event(5);
  ASSERT_TRUE(f.queue.add_outbuf(seg));  // 6
  EXPECT_TRUE(f.queue.kick());
  EXPECT_EQ(f.queue.kicks_sent(), 3u);
  EXPECT_EQ(f.queue.kicks_suppressed(), 2u);
  EXPECT_EQ(f.device.drain_kicks(), 3u);
}

TEST(FrontendDriverQueue, UsedEventRequestsInterruptsWithEventIdx) {
  Fixture f(true);
  auto seg = segments(f.memory, {64});
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(f.queue.add_outbuf(seg));
  auto complete = [&](int n) {
    for (int i = 0; i < n; ++i) {
      auto c = f.device.pop();
      ASSERT_TRUE(c.has_value());
      f.device.push_used(c->head, 0);
    }
    f.device.publish_used();
  };

  EXPECT_FALSE(f.queue.enable_interrupts());  // used_event = 0: signal for the first used
  EXPECT_EQ(f.queue.used_event(), 0);
  complete(1);
  EXPECT_TRUE(f.device.signal_if_needed());
  ASSERT_TRUE(f.queue.get_used());  // consuming moves used_event along
  EXPECT_EQ(f.queue.used_event(), 1);
  complete(1);
  EXPECT_TRUE(f.device.signal_if_needed());
  ASSERT_TRUE(f.queue.get_used());

  f.queue.disable_interrupts();
  EXPECT_EQ(f.queue.used_event(), static_cast<std::uint16_t>(f.queue.last_used_idx() - 1));
  complete(2);
  EXPECT_FALSE(f.device.signal_if_needed());
  while (f.queue.get_used()) {
  }
  EXPECT_EQ(f.queue.used_event(), 1);  // consuming with interrupts off leaves it alone

  f.queue.enable_interrupts_after(3);
  complete(2);
  EXPECT_FALSE(f.device.signal_if_needed());
  complete(1);
  EXPECT_TRUE(f.device.signal_if_needed());
  EXPECT_TRUE(f.queue.wait_for_interrupt(std::chrono::milliseconds(0)));
  EXPECT_EQ(f.queue.interrupts(), 3u);
  // The driver's flags stay 0 under EVENT_IDX (virtio 1.2, 2.7.7.2).
  EXPECT_EQ(f.queue.avail_flags(), 0);
}

TEST(FrontendDriverQueue, NoInterruptFlagWithoutEventIdx) {
  Fixture f(false);
  auto seg = segments(f.memory, {64});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.queue.add_outbuf(seg));
  f.queue.disable_interrupts();
  EXPECT_EQ(f.queue.avail_flags(), virtio::kAvailFlagNoInterrupt);
  auto c = f.device.pop();
  f.device.push_used(c->head, 0);
  f.device.publish_used();
  EXPECT_FALSE(f.device.signal_if_needed());
  EXPECT_TRUE(f.queue.enable_interrupts());  // one is already pending
  EXPECT_EQ(f.queue.avail_flags(), 0);
  c = f.device.pop();
  f.device.push_used(c->head, 0);
  f.device.publish_used();
  EXPECT_TRUE(f.device.signal_if_needed());
}

TEST(FrontendDriverQueue, IndicesWrapPast65535) {
  Fixture f(true, 8, false);
  auto seg = segments(f.memory, {32});
  for (std::uint32_t n = 0; n < 70000; ++n) {
    f.device.set_avail_event(f.queue.avail_idx());  // ask for a kick for the next entry
    ASSERT_TRUE(f.queue.add_outbuf(seg, n % 3 == 0));
    ASSERT_TRUE(f.queue.kick());
    ChainError err;
    auto c = f.device.pop(&err);
    ASSERT_TRUE(c.has_value()) << n << " " << chain_error_name(err);
    f.device.push_used(c->head, 0);
    f.device.publish_used();
    auto used = f.queue.get_used();
    ASSERT_TRUE(used.has_value()) << n;
    ASSERT_EQ(used->id, c->head);
  }
  EXPECT_EQ(f.queue.avail_idx(), static_cast<std::uint16_t>(70000));
  EXPECT_EQ(f.queue.kicks_sent(), 70000u);
  EXPECT_EQ(f.queue.num_free(), 8);
}

TEST(FrontendDriverQueue, ResetZeroesRingsAndForgetsChains) {
  Fixture f(false);
  auto seg = segments(f.memory, {64});
  ASSERT_TRUE(f.queue.add_outbuf(seg));
  ASSERT_TRUE(f.queue.kick());
  f.queue.set_device_base(7);
  f.queue.reset(true);
  EXPECT_TRUE(f.queue.event_idx());
  EXPECT_EQ(f.queue.avail_idx(), 0);
  EXPECT_EQ(f.queue.num_free(), 16);
  EXPECT_EQ(f.queue.device_base(), 0);
  EXPECT_EQ(f.queue.kicks_sent(), 0u);
  EXPECT_EQ(f.queue.descriptors()[0].addr, 0u);
  LoopbackDevice fresh(f.memory, f.queue);
  EXPECT_EQ(fresh.pending(), 0);
}

}  // namespace
}  // namespace xdpvhost::testing
