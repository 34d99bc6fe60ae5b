// Guest RAM of the test frontend: regions, address translations, allocation.

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <new>

#include "frontend/guest_memory_arena.hpp"

namespace xdpvhost::testing {
namespace {

TEST(FrontendGuestMemoryArena, OneRegionTable) {
  GuestMemoryArena mem(ArenaOptions{.size = 4u << 20});
  ASSERT_EQ(mem.regions().size(), 1u);
  const ArenaRegion& r = mem.regions()[0];
  EXPECT_EQ(r.guest_phys_addr, 0u);
  EXPECT_EQ(r.size, 4u << 20);
  EXPECT_EQ(r.mmap_offset, 0u);
  EXPECT_NE(r.user_addr, r.guest_phys_addr);
  EXPECT_GE(mem.fd(), 0);
}

TEST(FrontendGuestMemoryArena, TwoRegionsOfOneFdLikeQemu) {
  GuestMemoryArena mem(ArenaOptions{.size = 8u << 20, .two_regions = true});
  ASSERT_EQ(mem.regions().size(), 2u);
  const ArenaRegion& low = mem.regions()[0];
  const ArenaRegion& high = mem.regions()[1];
  EXPECT_EQ(low.guest_phys_addr, 0u);
  EXPECT_EQ(low.size, 4u << 20);
  EXPECT_EQ(high.guest_phys_addr, std::uint64_t{4} << 30);
  EXPECT_EQ(high.mmap_offset, 4u << 20);
  EXPECT_EQ(high.user_addr, low.user_addr + high.mmap_offset);
  // uva - gpa differs between the regions: one offset for all is wrong.
  EXPECT_NE(high.user_addr - high.guest_phys_addr, low.user_addr - low.guest_phys_addr);

  // Translations agree with the file layout.
  const std::uint64_t gpa = high.guest_phys_addr + 100;
  EXPECT_EQ(mem.host(gpa), mem.host_base() + high.mmap_offset + 100);
  EXPECT_EQ(mem.gpa_of(mem.host(gpa)), gpa);
  EXPECT_EQ(mem.user_addr_of(gpa), high.user_addr + 100);
  EXPECT_EQ(mem.host_from_user_addr(high.user_addr + 100), mem.host(gpa));

  // The hole and the ends.
  EXPECT_FALSE(mem.contains(mem.gpa_in_hole(), 1));
  EXPECT_FALSE(mem.contains(mem.gpa_past_end(), 1));
  EXPECT_TRUE(mem.contains(mem.region_last_gpa(0), 1));
  EXPECT_FALSE(mem.contains(mem.region_last_gpa(0), 2));  // straddles into the hole
  EXPECT_EQ(mem.host(~std::uint64_t{0} - 10, 100), nullptr);
}

TEST(FrontendGuestMemoryArena, AllocationAlternatesRegionsAndNeverStraddles) {
  GuestMemoryArena mem(ArenaOptions{.size = 4u << 20, .two_regions = true});
  const std::uint64_t a = mem.allocate(1000);
  const std::uint64_t b = mem.allocate(1000);
  EXPECT_LT(a, mem.regions()[1].guest_phys_addr);
  EXPECT_GE(b, mem.regions()[1].guest_phys_addr);
  EXPECT_NE(a, 0u);  // the first page is never handed out
  EXPECT_EQ(a % 64, 0u);
  for (int i = 0; i < 1000; ++i) {
    std::uint64_t g;
    try {
      g = mem.allocate(3000, 4096);
    } catch (const std::bad_alloc&) {
      break;
    }
    ASSERT_TRUE(mem.contains(g, 3000));
  }
  EXPECT_THROW(mem.allocate(3u << 20), std::bad_alloc);
  mem.reset_allocator();
  EXPECT_EQ(mem.allocate(1000), a);
}

TEST(FrontendGuestMemoryArena, ZeroClearsWhatASecondMappingSees) {
  GuestMemoryArena mem(ArenaOptions{.size = 2u << 20});
  // A second mapping of the fd stands for the backend's.
  void* other = ::mmap(nullptr, mem.size(), PROT_READ, MAP_SHARED, mem.fd(), 0);
  ASSERT_NE(other, MAP_FAILED);
  mem.host(0x2000)[0] = 0x77;
  EXPECT_EQ(static_cast<std::uint8_t*>(other)[0x2000], 0x77);
  mem.zero();
  EXPECT_EQ(static_cast<std::uint8_t*>(other)[0x2000], 0);
  EXPECT_EQ(mem.host(0x2000)[0], 0);
  ::munmap(other, mem.size());
}

}  // namespace
}  // namespace xdpvhost::testing
