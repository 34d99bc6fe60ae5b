#include "sys/thread_sample.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <chrono>
#include <thread>

#include "sys/unique_fd.hpp"

namespace xdpvhost::sys {
namespace {

TEST(ThreadSample, ParsesTheStateAfterTheLastParenthesis) {
  char state = '?';
  ASSERT_TRUE(parse_stat_state("4242 (xdpvhost-svc0) R 1 4242 4242 0 -1", state));
  EXPECT_EQ(state, 'R');
  // A name with spaces and parentheses of its own.
  ASSERT_TRUE(parse_stat_state("17 (a) b (c)) S 1 17", state));
  EXPECT_EQ(state, 'S');
  EXPECT_FALSE(parse_stat_state("", state));
  EXPECT_FALSE(parse_stat_state("17 (cut", state));
  EXPECT_FALSE(parse_stat_state("17 (cut)", state));
}

TEST(ThreadSample, ParsesSchedstat) {
  std::uint64_t run = 0, wait = 0;
  ASSERT_TRUE(parse_schedstat("123456789 987654 42\n", run, wait));
  EXPECT_EQ(run, 123456789u);
  EXPECT_EQ(wait, 987654u);
  EXPECT_FALSE(parse_schedstat("", run, wait));
  EXPECT_FALSE(parse_schedstat("12", run, wait));
}

TEST(ThreadSample, KernelStackKeepsNamesInnermostFirst) {
  const char* text =
      "[<0>] pipe_read+0x2f1/0x4b0\n"
      "[<0>] vfs_read+0x2a3/0x2c0\n"
      "[<0>] ksys_read+0x5f/0xe0\n"
      "garbage\n"
      "[<0>] do_syscall_64+0x3b/0x90\n";
  EXPECT_EQ(parse_kernel_stack(text), "pipe_read < vfs_read < ksys_read < do_syscall_64");
  EXPECT_EQ(parse_kernel_stack(text, 2), "pipe_read < vfs_read");
  EXPECT_EQ(parse_kernel_stack(""), "");
}

TEST(ThreadSample, DescribesWhatTheThreadDidBetweenTwoSamples) {
  ThreadSample before;
  before.valid = true;
  before.run_ns = 1'000'000;
  before.wait_ns = 0;
  ThreadSample after = before;
  after.state = 'R';
  after.run_ns = 51'000'000;    // ran 50 ms
  after.wait_ns = 850'000'000;  // waited 850 ms for a CPU
  after.taken = before.taken + std::chrono::milliseconds(900);
  after.wchan = "0";
  EXPECT_EQ(describe_between(before, after),
            "state R (running or runnable); in the last 900 ms it ran 50.0 ms and waited 850.0 ms "
            "for a CPU");
  after.state = 'S';
  after.wchan = "pipe_read";
  after.stack = "pipe_read < vfs_read";
  EXPECT_EQ(describe_between(ThreadSample{}, after),
            "state S (sleeping); sleeps in pipe_read; kernel stack: pipe_read < vfs_read");
  EXPECT_EQ(describe_between(before, ThreadSample{}), "its state cannot be read");
}

// A real thread asleep in read() on an empty pipe, then one that spins.
TEST(ThreadSample, SamplesALiveThreadOfThisProcess) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  UniqueFd rd(fds[0]), wr(fds[1]);
  std::atomic<pid_t> tid{0};
  std::thread reader([&] {
    tid = ::gettid();
    char c;
    (void)::read(rd.get(), &c, 1);
  });
  while (tid == 0) std::this_thread::yield();
  ThreadSample s;
  for (int i = 0; i < 200; ++i) {  // until it is asleep in read()
    s = sample_thread(tid);
    if (s.valid && s.state == 'S') break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(s.valid);
  EXPECT_EQ(s.state, 'S');
  if (::geteuid() == 0) {  // the stack is root's (CAP_SYS_ADMIN) to read
    EXPECT_NE(s.stack.find("pipe_read"), std::string::npos) << s.stack;
    const std::string line = describe_between(ThreadSample{}, s);
    EXPECT_NE(line.find("kernel stack: "), std::string::npos) << line;
    EXPECT_NE(line.find("pipe_read"), std::string::npos) << line;
  }
  ASSERT_EQ(::write(wr.get(), "x", 1), 1);
  reader.join();

  std::atomic<bool> stop{false};
  std::atomic<pid_t> spinner_tid{0};
  std::thread spinner([&] {
    spinner_tid = ::gettid();
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  while (spinner_tid == 0) std::this_thread::yield();
  const ThreadSample first = sample_thread(spinner_tid);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const ThreadSample second = sample_thread(spinner_tid);
  stop = true;
  spinner.join();
  ASSERT_TRUE(first.valid);
  ASSERT_TRUE(second.valid);
  // It ran or waited to run all along: never asleep.
  EXPECT_GT(second.run_ns + second.wait_ns, first.run_ns + first.wait_ns);
  EXPECT_EQ(second.state, 'R');
  EXPECT_EQ(sample_thread(0x7ffffff0).valid, false);  // no such thread
}

std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// The watcher samples a thread each time one goes silent, for months: every
// file it reads is closed again.
TEST(ThreadSample, ThousandsOfSamplesLeaveNoFdBehind) {
  const pid_t self = ::gettid();
  (void)sample_thread(self);  // the first use's one-time allocations
  const std::size_t before = open_fds();
  for (int i = 0; i < 3000; ++i) ASSERT_TRUE(sample_thread(self).valid);
  EXPECT_EQ(open_fds(), before);
}

}  // namespace
}  // namespace xdpvhost::sys
