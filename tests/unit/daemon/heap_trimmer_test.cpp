// The heap trimmer, a periodic path of the daemon: thousands of checks hold
// no fd, mapping or heap more than before, and a check trims when the
// allocator holds enough free.

#include "runtime/heap_trimmer.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sys/heap_policy.hpp"
#include "sys/resource_ledger.hpp"

namespace xdpvhost::daemon {
namespace {

TEST(HeapTrimmer, FiveThousandChecksHoldNothingMore) {
  boost::asio::io_context io;
  HeapTrimmer trimmer(io);
  trimmer.tick();
  const sys::ResourceLedger before = sys::take_resource_ledger();
  for (int i = 0; i < 5000; ++i) trimmer.tick();
  const sys::ResourceLedger after = sys::take_resource_ledger();
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.mapped.count, before.mapped.count);
  EXPECT_EQ(after.threads, before.threads);
  EXPECT_LE(after.heap.in_use, before.heap.in_use + 4096);
}

TEST(HeapTrimmer, TrimsWhenEnoughIsFree) {
  boost::asio::io_context io;
  HeapTrimmer trimmer(io);
  // Free holes among live blocks: 4 MiB of 1 KiB blocks, every 64th kept.
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(4096);
  for (int i = 0; i < 4096; ++i) blocks.push_back(std::make_unique<char[]>(1024));
  for (std::size_t i = 0; i < blocks.size(); ++i)
    if (i % 64 != 63) blocks[i].reset();
  EXPECT_GE(sys::heap_bytes().free, kHeapTrimAbove);
  EXPECT_EQ(trimmer.tick(), !sys::kSanitizerAllocator);
  EXPECT_EQ(trimmer.trims(), sys::kSanitizerAllocator ? 0u : 1u);
}

TEST(HeapTrimmer, ItsTimerRunsUntilStopped) {
  boost::asio::io_context io;
  HeapTrimmer trimmer(io);
  trimmer.start();
  boost::asio::steady_timer stop(io, std::chrono::milliseconds(20));
  stop.async_wait([&](const boost::system::error_code&) { trimmer.stop(); });
  EXPECT_EQ(io.run_for(std::chrono::seconds(5)), 2u)
      << "the stop, and the trimmer's cancelled wait";
}

}  // namespace
}  // namespace xdpvhost::daemon
