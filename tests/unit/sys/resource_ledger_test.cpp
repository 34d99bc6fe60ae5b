// The resource ledger counts what the process holds: each fd by its kind,
// each MemoryMapping by what it is for, threads, RSS and the heap.

#include "sys/resource_ledger.hpp"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <memory>
#include <thread>
#include <vector>

#include "sys/unique_fd.hpp"

namespace xdpvhost::sys {
namespace {

TEST(ResourceLedger, FdLinksAreSortedIntoKinds) {
  EXPECT_EQ(classify_fd_link("socket:[123456]"), FdKind::kSocket);
  EXPECT_EQ(classify_fd_link("anon_inode:[eventfd]"), FdKind::kEventfd);
  EXPECT_EQ(classify_fd_link("anon_inode:[eventpoll]"), FdKind::kEpoll);
  EXPECT_EQ(classify_fd_link("anon_inode:[timerfd]"), FdKind::kTimerfd);
  EXPECT_EQ(classify_fd_link("/memfd:pc.ram (deleted)"), FdKind::kMemfd);
  EXPECT_EQ(classify_fd_link("anon_inode:bpf-prog"), FdKind::kBpfProg);
  EXPECT_EQ(classify_fd_link("anon_inode:bpf-map"), FdKind::kBpfMap);
  EXPECT_EQ(classify_fd_link("pipe:[99]"), FdKind::kOther);
  EXPECT_EQ(classify_fd_link("/dev/null"), FdKind::kOther);
  EXPECT_EQ(classify_fd_link("anon_inode:[signalfd]"), FdKind::kOther);
  EXPECT_EQ(classify_fd_link(""), FdKind::kOther);
}

TEST(ResourceLedger, EachFdIsCountedOnceUnderItsKind) {
  const ResourceLedger before = take_resource_ledger();
  UniqueFd socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  UniqueFd event(::eventfd(0, EFD_CLOEXEC));
  UniqueFd event2(::eventfd(0, EFD_CLOEXEC));
  UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
  UniqueFd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC));
  UniqueFd memfd(::memfd_create("ledger-test", MFD_CLOEXEC));
  UniqueFd pipe_read, pipe_write;
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  pipe_read = UniqueFd(p[0]);
  pipe_write = UniqueFd(p[1]);
  const ResourceLedger with = take_resource_ledger();
  EXPECT_EQ(with.fds_of(FdKind::kSocket), before.fds_of(FdKind::kSocket) + 1);
  EXPECT_EQ(with.fds_of(FdKind::kEventfd), before.fds_of(FdKind::kEventfd) + 2);
  EXPECT_EQ(with.fds_of(FdKind::kEpoll), before.fds_of(FdKind::kEpoll) + 1);
  EXPECT_EQ(with.fds_of(FdKind::kTimerfd), before.fds_of(FdKind::kTimerfd) + 1);
  EXPECT_EQ(with.fds_of(FdKind::kMemfd), before.fds_of(FdKind::kMemfd) + 1);
  EXPECT_EQ(with.fds_of(FdKind::kOther), before.fds_of(FdKind::kOther) + 2);
  EXPECT_EQ(with.fds_total(), before.fds_total() + 8) << "the ledger's own fds are not counted";
  EXPECT_GT(with.fd_limit, 0u);
  socket.reset();
  event.reset();
  event2.reset();
  epoll.reset();
  timer.reset();
  memfd.reset();
  pipe_read.reset();
  pipe_write.reset();
  EXPECT_EQ(take_resource_ledger().fds, before.fds);
}

TEST(ResourceLedger, MappingsAreCountedByKindUntilTheyGo) {
  const MappedTotals before = mapped_totals();
  constexpr std::size_t kLength = 3 * 4096;
  auto map = [] {
    return ::mmap(nullptr, kLength, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  };
  {
    MemoryMapping umem(map(), kLength, MappingKind::kUmem);
    MemoryMapping guest(map(), kLength, MappingKind::kGuestMemory);
    const MappedTotals with = mapped_totals();
    EXPECT_EQ(with.bytes_of(MappingKind::kUmem), before.bytes_of(MappingKind::kUmem) + kLength);
    EXPECT_EQ(with.count_of(MappingKind::kUmem), before.count_of(MappingKind::kUmem) + 1);
    EXPECT_EQ(with.bytes_of(MappingKind::kGuestMemory),
              before.bytes_of(MappingKind::kGuestMemory) + kLength);
    // A move hands the mapping and its count over; nothing is counted twice.
    MemoryMapping moved(std::move(umem));
    MemoryMapping assigned;
    assigned = std::move(guest);
    const MappedTotals after_moves = mapped_totals();
    EXPECT_EQ(after_moves.bytes, with.bytes);
    EXPECT_EQ(after_moves.count, with.count);
    // Replacing a mapping by assignment unmaps and uncounts the old one.
    assigned = MemoryMapping(map(), kLength, MappingKind::kDirtyLog);
    EXPECT_EQ(mapped_totals().bytes_of(MappingKind::kGuestMemory),
              before.bytes_of(MappingKind::kGuestMemory));
    EXPECT_EQ(mapped_totals().bytes_of(MappingKind::kDirtyLog),
              before.bytes_of(MappingKind::kDirtyLog) + kLength);
    EXPECT_EQ(take_resource_ledger().mapped.bytes, mapped_totals().bytes);
  }
  EXPECT_EQ(mapped_totals().bytes, before.bytes);
  EXPECT_EQ(mapped_totals().count, before.count);
}

TEST(ResourceLedger, ThreadsAndResidentMemoryAreRead) {
  const ResourceLedger one = take_resource_ledger();
  EXPECT_GE(one.threads, 1u);
  EXPECT_GT(one.rss_bytes, 0u);
  std::thread t([&] { EXPECT_EQ(take_resource_ledger().threads, one.threads + 1); });
  t.join();
  EXPECT_TRUE(one.bpf_programs.empty()) << "a test holds no BPF program";
}

// What the allocator reports follows what the process allocates and frees:
// small blocks (arena chunks) and a large one (mapped on its own). In the
// sanitizer tree the sanitizer's allocator answers, with the same meaning.
TEST(ResourceLedger, TheHeapInUseFollowsAllocationsAndFrees) {
  constexpr std::size_t kBlocks = 1000, kBlock = 1024, kLarge = 8 << 20;
  constexpr std::uint64_t kSmall = kBlocks * kBlock;
  const HeapBytes before = heap_bytes();
  std::vector<std::unique_ptr<char[]>> blocks;
  blocks.reserve(kBlocks);
  for (std::size_t i = 0; i < kBlocks; ++i) {
    blocks.push_back(std::make_unique<char[]>(kBlock));
    blocks.back()[kBlock - 1] = static_cast<char>(i);
  }
  auto large = std::make_unique<char[]>(kLarge);
  large[kLarge - 1] = 1;
  const HeapBytes with = take_resource_ledger().heap;
  EXPECT_GE(with.in_use, before.in_use + kSmall + kLarge);
  EXPECT_LE(with.in_use, before.in_use + 2 * kSmall + kLarge + (1 << 20))
      << "chunk headers cost bytes, not kilobytes";
  blocks.clear();
  large.reset();
  const HeapBytes after = heap_bytes();
  // glibc's per-thread cache keeps a few freed blocks that it counts as in use.
  EXPECT_LE(after.in_use, with.in_use - kSmall - kLarge + 64 * kBlock);
}

}  // namespace
}  // namespace xdpvhost::sys
