// The heap policy: large blocks mapped on their own however many were freed
// before, and free pages among the small ones handed back to the kernel. In
// the sanitizer tree the sanitizer's allocator owns the heap: both calls
// say they changed nothing.

#include "sys/heap_policy.hpp"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstring>
#include <memory>
#include <vector>

#include "sys/resource_ledger.hpp"

namespace xdpvhost::sys {
namespace {

// A block of `size` bytes, every page written (resident).
std::unique_ptr<char[]> touched(std::size_t size) {
  auto block = std::make_unique_for_overwrite<char[]>(size);
  std::memset(block.get(), 0x5a, size);
  return block;
}

TEST(HeapPolicy, ALargeBlockIsMappedOnItsOwnEvenAfterOthersWereFreed) {
  if (kSanitizerAllocator) {
    EXPECT_FALSE(keep_large_blocks_mapped());
    return;
  }
  ASSERT_TRUE(keep_large_blocks_mapped());
  constexpr std::size_t kBlock = 1 << 20;
  for (int i = 0; i < 3; ++i) {
    const std::size_t mapped_before = ::mallinfo2().hblkhd;
    auto block = touched(kBlock);
    EXPECT_GE(::mallinfo2().hblkhd, mapped_before + kBlock) << "round " << i;
    block.reset();
    EXPECT_EQ(::mallinfo2().hblkhd, mapped_before) << "unmapped when freed, round " << i;
  }
}

TEST(HeapPolicy, FreePagesAmongSmallBlocksAreHandedBack) {
  if (kSanitizerAllocator) {
    EXPECT_FALSE(give_back_free_heap());
    return;
  }
  // 16 MiB of 1 KiB blocks; every 256th kept, so what is freed lies in holes
  // between live blocks (not at the arena's top, which free() trims itself).
  constexpr std::size_t kBlocks = 16384, kBlock = 1024, kKeepEvery = 256;
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(kBlocks);
  for (std::size_t i = 0; i < kBlocks; ++i) blocks.push_back(touched(kBlock));
  for (std::size_t i = 0; i < kBlocks; ++i)
    if (i % kKeepEvery != kKeepEvery - 1) blocks[i].reset();
  const std::uint64_t held = take_resource_ledger().rss_bytes;
  EXPECT_GE(heap_bytes().free, 12u << 20) << "the holes are free, and kept";
  EXPECT_TRUE(give_back_free_heap());
  const std::uint64_t after = take_resource_ledger().rss_bytes;
  EXPECT_LE(after + (8u << 20), held) << "RSS " << (held >> 10) << " KiB -> " << (after >> 10);
}

}  // namespace
}  // namespace xdpvhost::sys
