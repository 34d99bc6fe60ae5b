#include "virtio/dirty_log.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "test_ring.hpp"
#include "virtio/split_queue.hpp"

namespace xdpvhost::virtio {
namespace {

using test::TestRing;
constexpr auto kWrite = Descriptor::kFlagWrite;
constexpr std::uint64_t kPage = DirtyLog::kPageSize;

std::vector<std::uint64_t> marked_pages(const DirtyLog& log) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t p = 0; p < log.size() * 8; ++p)
    if (log.is_marked(p)) out.push_back(p);
  return out;
}

TEST(DirtyLog, OneBitPerPageLowBitFirst) {
  std::vector<std::uint8_t> bits(4, 0);
  auto log = DirtyLog::wrap(bits.data(), bits.size());
  ASSERT_TRUE(log->mark(0, 1));
  EXPECT_EQ(bits[0], 0x01);
  ASSERT_TRUE(log->mark(9 * kPage + 17, 1));  // page 9: byte 1, bit 1
  EXPECT_EQ(bits[1], 0x02);
  ASSERT_TRUE(log->mark(31 * kPage, kPage));  // the last page the log holds
  EXPECT_EQ(bits[3], 0x80);
  EXPECT_EQ(marked_pages(*log), (std::vector<std::uint64_t>{0, 9, 31}));
}

TEST(DirtyLog, ARangeMarksEveryPageItTouches) {
  std::vector<std::uint8_t> bits(4, 0);
  auto log = DirtyLog::wrap(bits.data(), bits.size());
  // 2 bytes across the boundary of pages 2 and 3, then 3 pages and a byte.
  ASSERT_TRUE(log->mark(3 * kPage - 1, 2));
  ASSERT_TRUE(log->mark(10 * kPage, 3 * kPage + 1));
  EXPECT_EQ(marked_pages(*log), (std::vector<std::uint64_t>{2, 3, 10, 11, 12, 13}));
  // A range ending exactly at a page boundary does not touch the next page.
  ASSERT_TRUE(log->mark(20 * kPage, kPage));
  EXPECT_FALSE(log->is_marked(21));
  // Nothing to mark for an empty write.
  ASSERT_TRUE(log->mark(25 * kPage, 0));
  EXPECT_FALSE(log->is_marked(25));
}

TEST(DirtyLog, RefusesPagesBeyondTheLogAndMarksNothing) {
  std::vector<std::uint8_t> bits(2, 0);
  auto log = DirtyLog::wrap(bits.data(), bits.size());
  EXPECT_FALSE(log->mark(16 * kPage, 1));                // first page past the end
  EXPECT_FALSE(log->mark(15 * kPage, kPage + 1));        // starts inside, ends outside
  EXPECT_FALSE(log->mark(~std::uint64_t{0} - 10, 100));  // wraps
  EXPECT_FALSE(log->mark(~std::uint64_t{0}, 1));
  EXPECT_EQ(bits[0], 0);
  EXPECT_EQ(bits[1], 0);
  EXPECT_TRUE(log->mark(15 * kPage, kPage));
}

TEST(DirtyLog, ConcurrentMarksOfOneByteAllLand) {
  // Eight threads each set their own bit of the same bytes, over and over:
  // a plain read-modify-write would lose bits.
  std::vector<std::uint8_t> bits(64, 0);
  auto log = DirtyLog::wrap(bits.data(), bits.size());
  for (int round = 0; round < 50; ++round) {
    std::fill(bits.begin(), bits.end(), 0);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 8; ++t)
      threads.emplace_back([&log, t] {
        for (std::uint64_t byte = 0; byte < 64; ++byte) log->mark((byte * 8 + t) * kPage, 1);
      });
    for (auto& th : threads) th.join();
    for (auto b : bits) ASSERT_EQ(b, 0xff);
  }
}

struct Memfd {
  int fd = -1;
  explicit Memfd(std::size_t size, unsigned flags = MFD_ALLOW_SEALING) {
    fd = ::memfd_create("dirty-log-test", flags);
    if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(size)) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~Memfd() {
    if (fd >= 0) ::close(fd);
  }
  sys::UniqueFd dup() const { return sys::UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }
};

TEST(DirtyLogMap, MapsAtTheOffsetAndSealsTheMemfd) {
  Memfd m(3 * 4096);
  ASSERT_GE(m.fd, 0);
  std::string error;
  auto log = DirtyLog::map(m.dup(), 4096, 4096 + 100, error);
  ASSERT_NE(log, nullptr) << error;
  EXPECT_EQ(log->size(), 4096u);
  ASSERT_TRUE(log->mark(8 * kPage, 1));  // byte 1 of the log
  // The frontend sees it where it put the log: offset 4196 + 1.
  std::uint8_t byte = 0;
  ASSERT_EQ(::pread(m.fd, &byte, 1, 4096 + 100 + 1), 1);
  EXPECT_EQ(byte, 0x01);
  EXPECT_NE(::fcntl(m.fd, F_GET_SEALS) & F_SEAL_SHRINK, 0);
  EXPECT_FALSE(log->mark(4096 * 8 * kPage, 1));
}

TEST(DirtyLogMap, RefusesBadLogs) {
  std::string error;
  Memfd m(8192);
  ASSERT_GE(m.fd, 0);
  EXPECT_EQ(DirtyLog::map(sys::UniqueFd{}, 4096, 0, error), nullptr);
  EXPECT_EQ(DirtyLog::map(m.dup(), 0, 0, error), nullptr);
  EXPECT_EQ(DirtyLog::map(m.dup(), 8192, 1, error), nullptr);  // past the end of the file
  EXPECT_NE(error.find("holds 8192 bytes"), std::string::npos) << error;
  EXPECT_EQ(DirtyLog::map(m.dup(), ~std::uint64_t{0}, 0, error), nullptr);
  EXPECT_EQ(DirtyLog::map(m.dup(), 16, ~std::uint64_t{0} - 4, error), nullptr);
  // A memfd that cannot be sealed against shrinking is not mapped.
  Memfd unsealable(8192, 0);
  ASSERT_GE(unsealable.fd, 0);
  EXPECT_EQ(DirtyLog::map(unsealable.dup(), 4096, 0, error), nullptr);
  EXPECT_NE(error.find("F_SEAL_SHRINK"), std::string::npos) << error;
  // Not a file.
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ::close(p[1]);
  EXPECT_EQ(DirtyLog::map(sys::UniqueFd(p[0]), 16, 0, error), nullptr);
}

// ---- the split queue's writes into guest memory, logged -----------------

struct LoggedQueueTest : ::testing::Test {
  TestRing ring{8};
  SplitQueue q;
  DescriptorChain chain;
  // Covers 64 MiB: the TestRing's memory (at 1 MiB, 8 MiB long) and kUsedLog.
  std::vector<std::uint8_t> bits = std::vector<std::uint8_t>(2048, 0);
  std::shared_ptr<const DirtyLog> log = DirtyLog::wrap(bits.data(), bits.size());
  // Where the used ring is logged: not its own address, to tell them apart.
  static constexpr std::uint64_t kUsedLog = 0x2000000;

  SplitQueue::Config config(bool log_used) {
    auto c = ring.config();
    c.log = log;
    c.log_used = log_used;
    c.used_log_gpa = kUsedLog;
    return c;
  }
  std::uint64_t page(std::uint64_t gpa) const { return gpa / kPage; }
};

TEST_F(LoggedQueueTest, WrittenBuffersAreMarkedUpToTheBytesWritten) {
  ASSERT_EQ(q.attach(ring.memory, config(false)), QueueError::kNone);
  EXPECT_TRUE(q.logging());
  // One chain: 100 bytes in one page, then 3 pages starting at a page boundary.
  const std::uint64_t a = 0x300000 + 4000;
  const std::uint64_t b = 0x310000;
  ring.set_desc(0, a, 100, kWrite | Descriptor::kFlagNext, 1);
  ring.set_desc(1, b, 3 * kPage, kWrite);
  ring.publish(0);
  ASSERT_TRUE(q.pop(chain, SplitQueue::Direction::kDeviceWrites));
  // 100 + kPage + 1 bytes written: a's page(s), b's first two pages.
  ASSERT_TRUE(q.log_writes(chain, 100 + kPage + 1));
  EXPECT_EQ(marked_pages(*log),
            (std::vector<std::uint64_t>{page(a), page(a + 99), page(b), page(b) + 1}));
}

TEST_F(LoggedQueueTest, UsedRingIsLoggedAtTheLogAddressWhenAsked) {
  ASSERT_EQ(q.attach(ring.memory, config(true)), QueueError::kNone);
  ring.set_desc(0, 0x300000, 64, kWrite);
  ring.publish(0);
  ASSERT_TRUE(q.pop(chain, SplitQueue::Direction::kDeviceWrites));
  q.add_used(chain.head, 64);
  EXPECT_TRUE(marked_pages(*log).empty()) << "marked before it is published";
  q.publish_used();
  EXPECT_EQ(ring.used_idx(), 1);
  // Used element and used->idx, both in the first page of the used ring's
  // log address; never at the ring's own address.
  EXPECT_EQ(marked_pages(*log), (std::vector<std::uint64_t>{page(kUsedLog)}));
  EXPECT_FALSE(log->is_marked(page(ring.used_gpa)));
}

TEST_F(LoggedQueueTest, UsedElementsThatWrapAreMarkedInBothPlaces) {
  // A 1024-entry ring logged 4 bytes before a page boundary: used->idx is
  // on the first page, elements 0 and 1 on the second, 1022 and 1023 on
  // the third. A batch 1022, 1023, 0, 1 wraps.
  TestRing big{1024};
  auto c = big.config();
  c.log = log;
  c.log_used = true;
  c.used_log_gpa = kUsedLog + kPage - 4;
  ASSERT_EQ(q.attach(big.memory, c), QueueError::kNone);
  for (std::uint16_t i = 0; i < 1024; ++i) big.set_desc(i, 0x300000 + 64u * i, 64, kWrite);
  for (std::uint16_t i = 0; i < 1022; ++i) {
    big.publish(i);
    ASSERT_TRUE(q.pop(chain, SplitQueue::Direction::kDeviceWrites));
    q.add_used(chain.head, 64);
  }
  q.publish_used();
  std::fill(bits.begin(), bits.end(), 0);
  for (std::uint16_t i = 1022; i < 1026; ++i) {
    big.publish(static_cast<std::uint16_t>(i % 1024));
    ASSERT_TRUE(q.pop(chain, SplitQueue::Direction::kDeviceWrites));
    q.add_used(chain.head, 64);
  }
  q.publish_used();
  EXPECT_EQ(big.used_idx(), 1026);
  const std::uint64_t first = page(kUsedLog);
  EXPECT_EQ(marked_pages(*log), (std::vector<std::uint64_t>{first, first + 1, first + 2}));
}

TEST_F(LoggedQueueTest, NotificationFieldsInTheUsedRingAreLogged) {
  TestRing evt{8, true};
  auto c = evt.config();
  c.log = log;
  c.log_used = true;
  c.used_log_gpa = kUsedLog;
  ASSERT_EQ(q.attach(evt.memory, c), QueueError::kNone);
  q.enable_notifications();  // writes avail_event (used ring offset 4 + 8 * 8)
  EXPECT_TRUE(log->is_marked(page(kUsedLog + 4 + 64)));
}

TEST_F(LoggedQueueTest, WithoutTheLogFlagOnlyBuffersAreLogged) {
  ASSERT_EQ(q.attach(ring.memory, config(false)), QueueError::kNone);
  ring.set_desc(0, 0x300000, 64, kWrite);
  ring.publish(0);
  ASSERT_TRUE(q.pop(chain, SplitQueue::Direction::kDeviceWrites));
  q.add_used(chain.head, 64);
  q.publish_used();
  EXPECT_TRUE(marked_pages(*log).empty());
}

TEST_F(LoggedQueueTest, AUsedRingBeyondTheLogBreaksTheQueueAtAttach) {
  auto c = config(true);
  c.used_log_gpa = bits.size() * 8 * kPage - 16;  // its last bytes fall past the log
  EXPECT_EQ(q.attach(ring.memory, c), QueueError::kLogOutOfRange);
  EXPECT_FALSE(q.usable());
}

TEST_F(LoggedQueueTest, ABufferBeyondTheLogBreaksTheQueue) {
  // A log smaller than guest memory: the buffer's page has no bit.
  std::vector<std::uint8_t> small(8, 0);  // 64 pages: 256 KiB
  auto c = ring.config();
  c.log = DirtyLog::wrap(small.data(), small.size());
  ASSERT_EQ(q.attach(ring.memory, c), QueueError::kNone);
  ring.set_desc(0, 0x300000, 64, kWrite);
  ring.publish(0);
  ASSERT_TRUE(q.pop(chain, SplitQueue::Direction::kDeviceWrites));
  EXPECT_FALSE(q.log_writes(chain, 64));
  EXPECT_EQ(q.error(), QueueError::kLogOutOfRange);
}

TEST_F(LoggedQueueTest, WithoutALogNothingIsMarked) {
  ASSERT_EQ(q.attach(ring.memory, ring.config()), QueueError::kNone);
  EXPECT_FALSE(q.logging());
  ring.set_desc(0, 0x300000, 64, kWrite);
  ring.publish(0);
  ASSERT_TRUE(q.pop(chain, SplitQueue::Direction::kDeviceWrites));
  EXPECT_TRUE(q.log_writes(chain, 64));
  q.add_used(chain.head, 64);
  q.publish_used();
  EXPECT_TRUE(marked_pages(*log).empty());
}

}  // namespace
}  // namespace xdpvhost::virtio
