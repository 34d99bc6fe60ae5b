#include "virtio/guest_memory.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace xdpvhost::virtio {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

sys::UniqueFd make_memfd(std::uint64_t size) {
  sys::UniqueFd fd(::memfd_create("guest", MFD_CLOEXEC));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(size)), 0);
  return fd;
}

sys::UniqueFd dup(const sys::UniqueFd& fd) {
  return sys::UniqueFd(::dup(fd.get()));
}

// Two regions of one fd, as QEMU sends them for a guest with more than about
// 2.75 GiB: [0, 1 MiB) at fd offset 0 and [1 MiB, 3 MiB) at fd offset 1 MiB,
// with frontend addresses unrelated to guest-physical ones.
std::shared_ptr<const GuestMemory> two_regions(sys::UniqueFd& fd, std::string& error) {
  fd = make_memfd(3 * kMiB);
  std::vector<MemoryRegionSpec> specs;
  specs.push_back({0, kMiB, 0x7f0000000000, 0, dup(fd)});
  specs.push_back({kMiB, 2 * kMiB, 0x7f0000200000, kMiB, dup(fd)});
  return GuestMemory::map(std::move(specs), error);
}

TEST(GuestMemory, TranslatesGuestPhysicalAndFrontendAddresses) {
  sys::UniqueFd fd;
  std::string error;
  auto mem = two_regions(fd, error);
  ASSERT_NE(mem, nullptr) << error;
  // Writes through the fd's own mapping are seen at the translated addresses.
  void* raw = ::mmap(nullptr, 3 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  ASSERT_NE(raw, MAP_FAILED);
  auto* bytes = static_cast<std::uint8_t*>(raw);
  bytes[100] = 0xaa;
  bytes[kMiB + 5] = 0xbb;
  EXPECT_EQ(*mem->translate_gpa(100, 1), 0xaa);
  EXPECT_EQ(*mem->translate_gpa(kMiB + 5, 1), 0xbb);
  EXPECT_EQ(*mem->translate_uva(0x7f0000000000 + 100, 1), 0xaa);
  EXPECT_EQ(*mem->translate_uva(0x7f0000200000 + 5, 1), 0xbb);
  ::munmap(raw, 3 * kMiB);
}

TEST(GuestMemory, RefusesRangesOutsideOrAcrossRegions) {
  sys::UniqueFd fd;
  std::string error;
  auto mem = two_regions(fd, error);
  ASSERT_NE(mem, nullptr) << error;
  EXPECT_EQ(mem->translate_gpa(3 * kMiB, 1), nullptr);
  EXPECT_EQ(mem->translate_gpa(3 * kMiB - 1, 2), nullptr);
  EXPECT_EQ(mem->translate_gpa(kMiB - 1, 2), nullptr) << "contiguous only within one region";
  EXPECT_EQ(mem->translate_gpa(~std::uint64_t{0}, 2), nullptr);
  EXPECT_EQ(mem->translate_gpa(10, ~std::uint64_t{0}), nullptr);
  EXPECT_EQ(mem->translate_uva(0x10, 4), nullptr) << "a GPA is not a frontend address";
  EXPECT_NE(mem->translate_gpa(3 * kMiB - 1, 1), nullptr);
}

TEST(GuestMemory, SplitsABufferAcrossAdjacentRegions) {
  sys::UniqueFd fd;
  std::string error;
  auto mem = two_regions(fd, error);
  ASSERT_NE(mem, nullptr) << error;
  HostSpan spans[4];
  ASSERT_EQ(mem->gpa_to_spans(kMiB - 100, 300, spans, 4), 2);
  EXPECT_EQ(spans[0].len, 100u);
  EXPECT_EQ(spans[1].len, 200u);
  EXPECT_EQ(spans[1].data, mem->translate_gpa(kMiB, 1));
  EXPECT_EQ(mem->gpa_to_spans(3 * kMiB - 100, 300, spans, 4), -1);
  EXPECT_EQ(mem->gpa_to_spans(kMiB - 100, 300, spans, 1), -1) << "span limit";
}

TEST(GuestMemory, RefusesOverlappingRegions) {
  auto fd = make_memfd(2 * kMiB);
  std::vector<MemoryRegionSpec> specs;
  specs.push_back({0, kMiB, 0x1000000, 0, dup(fd)});
  specs.push_back({kMiB / 2, kMiB, 0x2000000, 0, dup(fd)});
  std::string error;
  EXPECT_EQ(GuestMemory::map(std::move(specs), error), nullptr);
  EXPECT_NE(error.find("overlaps"), std::string::npos) << error;
}

TEST(GuestMemory, RefusesRegionsWithoutFdOrWrapping) {
  std::string error;
  std::vector<MemoryRegionSpec> specs;
  specs.push_back({0, kMiB, 0, 0, sys::UniqueFd{}});
  EXPECT_EQ(GuestMemory::map(std::move(specs), error), nullptr);
  auto fd = make_memfd(kMiB);
  specs.clear();
  specs.push_back({~std::uint64_t{0} - 10, kMiB, 0, 0, dup(fd)});
  EXPECT_EQ(GuestMemory::map(std::move(specs), error), nullptr);
  EXPECT_NE(error.find("wraps"), std::string::npos) << error;
}

std::shared_ptr<const GuestMemory> map_one(sys::UniqueFd fd, std::string& error) {
  std::vector<MemoryRegionSpec> specs;
  specs.push_back({0, kMiB, 0x7f0000000000, 0, std::move(fd)});
  return GuestMemory::map(std::move(specs), error);
}

// A seal stops shrinking, not a punched hole (on hugetlbfs a hole whose page
// cannot be had again faults like a truncation: integration suite
// HugetlbGuard.*), so sealed regions are guarded as well.
TEST(GuestMemory, EveryRegionIsGuardedSealedOrNot) {
  std::string error;
  sys::UniqueFd sealable(::memfd_create("guest", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  ASSERT_EQ(::ftruncate(sealable.get(), static_cast<off_t>(kMiB)), 0);
  const int probe = ::fcntl(sealable.get(), F_DUPFD_CLOEXEC, 0);
  auto sealed = map_one(std::move(sealable), error);
  ASSERT_NE(sealed, nullptr) << error;
  EXPECT_NE(::fcntl(probe, F_GET_SEALS) & F_SEAL_SHRINK, 0) << "sealed by map()";
  ::close(probe);
  EXPECT_TRUE(sealed->regions()[0].guard.valid());
  auto unsealed = map_one(make_memfd(kMiB), error);
  ASSERT_NE(unsealed, nullptr) << error;
  EXPECT_TRUE(unsealed->regions()[0].guard.valid());
}

// The frontend cuts its memfd (one that refuses sealing) short under the
// mapping: the access completes, reading zeros, and the memory says so.
TEST(GuestMemory, ATruncationUnderTheMappingIsRecovered) {
  std::string error;
  auto fd = make_memfd(kMiB);
  auto mem = map_one(dup(fd), error);
  ASSERT_NE(mem, nullptr) << error;
  volatile std::uint8_t* byte = mem->translate_gpa(kMiB / 2, 1);
  *byte = 7;
  ASSERT_EQ(::ftruncate(fd.get(), 0), 0);
  EXPECT_EQ(*byte, 0);
  EXPECT_TRUE(mem->truncated());
}

// Only a fault is recovered: a SIGBUS that names a guarded address but was
// queued by a process (si_code SI_QUEUE) is left to the default action.
TEST(GuestMemoryDeathTest, AQueuedSigbusIsNotRecovered) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  std::string error;
  auto mem = map_one(make_memfd(kMiB), error);
  ASSERT_NE(mem, nullptr) << error;
  void* const addr = mem->translate_gpa(0, 1);
  EXPECT_DEATH(
      {
        siginfo_t info{};
        info.si_signo = SIGBUS;
        info.si_code = SI_QUEUE;
        info.si_addr = addr;
        ::syscall(SYS_rt_tgsigqueueinfo, ::getpid(), ::gettid(), SIGBUS, &info);
        std::_Exit(0);  // recovered (the old handler did): a clean exit, and the test fails
      },
      "");
}

}  // namespace
}  // namespace xdpvhost::virtio
