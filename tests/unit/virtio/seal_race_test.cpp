// The frontend keeps every fd it sends and may shrink a memfd up to the
// moment the daemon seals it. GuestMemory::map and DirtyLog::map must judge a
// region by the size the file has once sealed, not by one read before: a
// region over a file emptied in between would be mapped unguarded and the
// first ring access would kill the daemon with SIGBUS.
//
// The race is made to happen every time: this binary is linked with
// -Wl,--wrap=fcntl, and while `g_shrink_before_seal` is set the wrapper cuts
// the file to nothing just before the F_ADD_SEALS it wraps (what a frontend
// that wins the race does).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>

#include "virtio/dirty_log.hpp"
#include "virtio/guest_memory.hpp"

namespace {
bool g_shrink_before_seal = false;
}  // namespace

extern "C" int __real_fcntl(int fd, int cmd, ...);  // NOLINT: the linker's name

extern "C" int __wrap_fcntl(int fd, int cmd, ...) {  // NOLINT: the linker's name
  va_list args;
  va_start(args, cmd);
  void* arg = va_arg(args, void*);  // an int or a pointer: one register either way
  va_end(args);
  if (cmd == F_ADD_SEALS && g_shrink_before_seal) (void)::ftruncate(fd, 0);
  return __real_fcntl(fd, cmd, arg);
}

namespace xdpvhost::virtio {
namespace {

constexpr std::uint64_t kSize = 1 << 20;

sys::UniqueFd sealable_memfd() {
  sys::UniqueFd fd(::memfd_create("seal-race", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  EXPECT_TRUE(fd.valid());
  EXPECT_EQ(::ftruncate(fd.get(), static_cast<off_t>(kSize)), 0);
  return fd;
}

struct ShrinkBeforeSeal {
  ShrinkBeforeSeal() { g_shrink_before_seal = true; }
  ~ShrinkBeforeSeal() { g_shrink_before_seal = false; }
};

std::shared_ptr<const GuestMemory> map_one_region(sys::UniqueFd fd, std::string& error) {
  std::vector<MemoryRegionSpec> specs;
  specs.push_back({0, kSize, 0x7f0000000000, 0, std::move(fd)});
  return GuestMemory::map(std::move(specs), error);
}

TEST(SealRace, AMemoryRegionShrunkBeforeItsSealIsRefused) {
  std::string error;
  {
    ShrinkBeforeSeal race;
    EXPECT_EQ(map_one_region(sealable_memfd(), error), nullptr)
        << "a region over a file emptied before its seal was mapped";
    EXPECT_NE(error.find("of an fd of 0 bytes"), std::string::npos) << error;
  }
  // Without the race the same region maps.
  EXPECT_NE(map_one_region(sealable_memfd(), error), nullptr) << error;
}

TEST(SealRace, ADirtyLogShrunkBeforeItsSealIsRefused) {
  std::string error;
  {
    ShrinkBeforeSeal race;
    EXPECT_EQ(DirtyLog::map(sealable_memfd(), kSize, 0, error), nullptr)
        << "a log over a file emptied before its seal was mapped";
    EXPECT_NE(error.find("holds 0 bytes"), std::string::npos) << error;
  }
  EXPECT_NE(DirtyLog::map(sealable_memfd(), kSize, 0, error), nullptr) << error;
}

}  // namespace
}  // namespace xdpvhost::virtio
