#include "xsk/frame_pool.hpp"

#include <gtest/gtest.h>

#include <set>

namespace xdpvhost::xsk {
namespace {

TEST(FramePool, HandsOutEveryFrameOnceInAddressOrder) {
  FramePool pool(2048, 8);
  EXPECT_EQ(pool.available(), 8u);
  std::set<std::uint64_t> seen;
  for (int i = 0; i < 8; ++i) {
    const std::uint64_t addr = pool.alloc();
    EXPECT_EQ(addr, static_cast<std::uint64_t>(i) * 2048);
    EXPECT_TRUE(seen.insert(addr).second);
  }
  EXPECT_EQ(pool.alloc(), FramePool::kInvalid);
  EXPECT_EQ(pool.available(), 0u);
}

TEST(FramePool, FreeStoresTheFrameBaseOfAnInteriorAddress) {
  FramePool pool(4096, 4);
  std::uint64_t frames[4];
  ASSERT_EQ(pool.alloc_bulk(frames, 4), 4u);
  // An RX descriptor points at the data: frame base + 256 (+ headroom).
  EXPECT_TRUE(pool.free(frames[2] + 256 + 14));
  EXPECT_EQ(pool.alloc(), frames[2]);
}

TEST(FramePool, RefusesDoubleFreeAndAddressesOutsideTheUmem) {
  FramePool pool(2048, 4);
  const std::uint64_t a = pool.alloc();
  EXPECT_TRUE(pool.free(a));
  EXPECT_FALSE(pool.free(a));         // already free
  EXPECT_FALSE(pool.free(a + 100));   // same frame, still free
  EXPECT_FALSE(pool.free(4 * 2048));  // one past the end
  EXPECT_EQ(pool.rejected(), 3u);
  EXPECT_EQ(pool.available(), 4u);
}

TEST(FramePool, BulkAllocStopsWhenEmpty) {
  FramePool pool(2048, 3);
  std::uint64_t out[5];
  EXPECT_EQ(pool.alloc_bulk(out, 5), 3u);
  EXPECT_EQ(pool.alloc_bulk(out, 5), 0u);
  EXPECT_TRUE(pool.free(out[1]));
  EXPECT_EQ(pool.alloc_bulk(out, 5), 1u);
}

TEST(FramePool, FrameBaseMasksTheOffset) {
  FramePool pool(2048, 4);
  EXPECT_EQ(pool.frame_base(2048 + 300), 2048u);
  EXPECT_EQ(pool.frame_base(4095), 2048u);
  EXPECT_EQ(pool.frame_base(4096), 4096u);
}

}  // namespace
}  // namespace xdpvhost::xsk
