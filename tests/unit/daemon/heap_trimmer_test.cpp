// The heap trimmer, a periodic path of the daemon: thousands of checks hold
// no fd, mapping or heap more than before; a check trims when the heap in
// use fell from its peak, and a heap that did not shrink only every
// kHeapTrimEvery checks.

#include "runtime/heap_trimmer.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "sys/heap_policy.hpp"
#include "sys/resource_ledger.hpp"

namespace xdpvhost::daemon {
namespace {

// 4 MiB of 1 KiB blocks; freeing all but every 64th leaves holes among
// live blocks, which only a trim hands back.
class FourMiBOfSmallBlocks {
 public:
  FourMiBOfSmallBlocks() {
    blocks_.reserve(4096);
    for (int i = 0; i < 4096; ++i) blocks_.push_back(std::make_unique<char[]>(1024));
  }
  void free_all_but_every_64th() {
    for (std::size_t i = 0; i < blocks_.size(); ++i)
      if (i % 64 != 63) blocks_[i].reset();
  }

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
};

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

TEST(HeapTrimmer, TrimsOnTheCheckAfterTheHeapInUseFell) {
  boost::asio::io_context io;
  HeapTrimmer trimmer(io);
  FourMiBOfSmallBlocks blocks;
  EXPECT_FALSE(trimmer.tick()) << "the first check sees the peak and has nothing to trim";
  blocks.free_all_but_every_64th();
  EXPECT_GE(sys::heap_bytes().free, kHeapTrimAbove);
  EXPECT_EQ(trimmer.tick(), !sys::kSanitizerAllocator);
  EXPECT_EQ(trimmer.trims(), sys::kSanitizerAllocator ? 0u : 1u);
}

TEST(HeapTrimmer, AHeapThatDidNotShrinkIsTrimmedOnlyEveryKHeapTrimEveryChecks) {
  // (The sanitizer's allocator is never trimmed: no check trims there.)
  const bool trims = !sys::kSanitizerAllocator;
  boost::asio::io_context io;
  HeapTrimmer trimmer(io);
  FourMiBOfSmallBlocks blocks;
  trimmer.tick();
  blocks.free_all_but_every_64th();
  ASSERT_EQ(trimmer.tick(), trims);
  for (unsigned i = 1; i < kHeapTrimEvery; ++i) ASSERT_FALSE(trimmer.tick()) << "check " << i;
  EXPECT_EQ(trimmer.tick(), trims) << "the free holes are still there at check " << kHeapTrimEvery;
  EXPECT_EQ(trimmer.trims(), trims ? 2u : 0u);
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
