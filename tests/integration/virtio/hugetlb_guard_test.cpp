// A sealed hugetlbfs memfd cannot shrink, but a hole can be punched into it
// (fallocate), and when the hugepage pool is empty the page cannot be had
// again: the next access faults with SIGBUS, exactly as a truncation does.
// A hostile frontend on a hugepage node (KubeVirt backs such VMs with
// hugetlbfs) could do this to its own memory table or dirty log and, were
// sealed mappings unguarded, kill the daemon with every tenant's networking.
// Here the guard must recover it and flag the memory (the port's queues then
// break with memory_truncated, as HostileFrontend.TruncatedGuestMemory* shows
// for a truncation).
//
// Needs root: the test raises vm.nr_hugepages by what it uses and gives it
// back afterwards, also on failure: the attack runs in a forked child, so an
// access the guard does not recover kills the child, not the test (ctest
// RESOURCE_LOCK hugepages keeps the suites that look at the pool apart).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "sys/memory_mapping.hpp"
#include "sys/unique_fd.hpp"
#include "virtio/dirty_log.hpp"
#include "virtio/guest_memory.hpp"

namespace xdpvhost::virtio {
namespace {

constexpr std::uint64_t kHugepage = 2 << 20;
constexpr const char* kPoolFile = "/proc/sys/vm/nr_hugepages";

std::optional<long> read_number(const std::string& file) {
  std::ifstream in(file);
  long v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

bool write_number(const std::string& file, long v) {
  std::ofstream out(file);
  out << v << '\n';
  out.flush();
  return static_cast<bool>(out);
}

long free_hugepages() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    const std::string key = "HugePages_Free:";
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  }
  return -1;
}

// vm.nr_hugepages raised by `pages` for the life of the object.
class HugepagePool {
 public:
  explicit HugepagePool(long pages) {
    previous_ = read_number(kPoolFile);
    if (previous_ && write_number(kPoolFile, *previous_ + pages)) raised_ = true;
  }
  ~HugepagePool() {
    if (raised_) write_number(kPoolFile, *previous_);
  }
  bool raised() const { return raised_ && free_hugepages() >= 1; }

 private:
  std::optional<long> previous_;
  bool raised_ = false;
};

// A hugetlbfs memfd sealed as QEMU seals its memory (shrink, grow, seal).
sys::UniqueFd sealed_hugetlb_memfd(std::uint64_t size) {
  sys::UniqueFd fd(::memfd_create("hugetlb-guard", MFD_CLOEXEC | MFD_HUGETLB | MFD_ALLOW_SEALING));
  if (!fd.valid() || ::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return {};
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) return {};
  return fd;
}

// Every free hugepage, taken and touched, for the life of the object.
class PoolExhauster {
 public:
  PoolExhauster() {
    const long pages = free_hugepages();
    if (pages <= 0) return;
    fd_.reset(::memfd_create("hugetlb-exhaust", MFD_CLOEXEC | MFD_HUGETLB));
    const auto size = static_cast<std::size_t>(pages) * kHugepage;
    if (!fd_.valid() || ::ftruncate(fd_.get(), static_cast<off_t>(size)) != 0) return;
    void* p =
        ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_.get(), 0);
    if (p != MAP_FAILED) mapping_ = sys::MemoryMapping(p, size);
  }
  bool emptied_the_pool() const { return mapping_.data() != nullptr && free_hugepages() == 0; }

 private:
  sys::UniqueFd fd_;
  sys::MemoryMapping mapping_;
};

bool punch_hole(int fd, std::uint64_t size) {
  return ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(size)) ==
         0;
}

// What a child found: 0 recovered as expected, else which step failed.
enum Outcome : int { kRecovered = 0, kNoHole = 10, kPoolNotEmptied, kNotZero, kNotFlagged };

// Runs `attack` in a child: an unrecovered SIGBUS kills the child, not the
// test, and the parent gives the pool back whatever happened.
template <class Attack>
void expect_recovered(Attack attack) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) std::_Exit(attack());
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_FALSE(WIFSIGNALED(status)) << "killed by signal " << WTERMSIG(status)
                                    << " (SIGBUS: the guard did not recover the access)";
  ASSERT_TRUE(WIFEXITED(status));
  switch (WEXITSTATUS(status)) {
    case kRecovered:
      return;
    case kNoHole:
      FAIL() << "fallocate(PUNCH_HOLE) failed";
    case kPoolNotEmptied:
      FAIL() << "could not take every free hugepage";
    case kNotZero:
      FAIL() << "the access did not complete on anonymous memory (zeros)";
    case kNotFlagged:
      FAIL() << "the memory does not say it was truncated";
    default:
      FAIL() << "child exit status " << WEXITSTATUS(status);
  }
}

class HugetlbGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "raising vm.nr_hugepages needs root";
    ASSERT_TRUE(pool_.raised()) << "could not raise " << kPoolFile;
  }
  HugepagePool pool_{2};
};

TEST_F(HugetlbGuard, AHolePunchedIntoSealedGuestMemoryIsRecovered) {
  sys::UniqueFd fd = sealed_hugetlb_memfd(kHugepage);
  ASSERT_TRUE(fd.valid()) << "memfd_create(MFD_HUGETLB) + seals: " << std::strerror(errno);
  const int frontend = fd.get();  // the frontend keeps its fd (the spec's is a dup)
  std::vector<MemoryRegionSpec> specs;
  specs.push_back({0, kHugepage, 0x7f0000000000, 0, sys::UniqueFd(::dup(frontend))});
  std::string error;
  auto mem = GuestMemory::map(std::move(specs), error);
  ASSERT_NE(mem, nullptr) << error;
  volatile std::uint8_t* byte = mem->translate_gpa(4096, 1);
  *byte = 7;  // the page is there
  expect_recovered([&] {
    if (!punch_hole(frontend, kHugepage)) return kNoHole;
    PoolExhauster exhauster;
    if (!exhauster.emptied_the_pool()) return kPoolNotEmptied;
    if (*byte != 0) return kNotZero;  // this access faults: the guard's
    return mem->truncated() ? kRecovered : kNotFlagged;
  });
}

TEST_F(HugetlbGuard, AHolePunchedIntoASealedDirtyLogIsRecovered) {
  sys::UniqueFd fd = sealed_hugetlb_memfd(kHugepage);
  ASSERT_TRUE(fd.valid()) << "memfd_create(MFD_HUGETLB) + seals: " << std::strerror(errno);
  const int frontend = fd.get();
  std::string error;
  auto log = DirtyLog::map(sys::UniqueFd(::dup(frontend)), 4096, 0, error);
  ASSERT_NE(log, nullptr) << error;
  ASSERT_TRUE(log->mark(0, 1));
  expect_recovered([&] {
    if (!punch_hole(frontend, kHugepage)) return kNoHole;
    PoolExhauster exhauster;
    if (!exhauster.emptied_the_pool()) return kPoolNotEmptied;
    log->mark(DirtyLog::kPageSize, 1);       // this access faults: the guard's
    if (log->is_marked(0)) return kNotZero;  // the log's byte now reads zero but for the new bit
    return log->truncated() ? kRecovered : kNotFlagged;
  });
}

}  // namespace
}  // namespace xdpvhost::virtio
