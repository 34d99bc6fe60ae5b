// PeerIoWatch: a syscall on an fd whose peer cleared O_NONBLOCK sleeps until
// the watcher interrupts it; calls that do not sleep are never interrupted,
// however long they take (a thread preempted inside one on a loaded node).
// An eventfd made blocking stands for the peer's: a read sleeps while its
// counter is zero, a write while it is full. (No timing is asserted: the
// checks repeat until the call returns.)

#include "sys/peer_io_watch.hpp"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <functional>
#include <thread>

#include "sys/unique_fd.hpp"

namespace {

using xdpvhost::sys::PeerIoWatch;
using xdpvhost::sys::UniqueFd;

struct Outcome {
  ssize_t result = 0;
  int error = 0;
};

// Runs `io` inside a Call on a thread bound to `watch`, checks the watch
// every 10 ms (as the daemon's watcher does every 100 ms) until it returns,
// for at most 10 s; then `unblock` frees a thread the watch failed to.
Outcome run_watched(PeerIoWatch& watch, const std::function<ssize_t()>& io,
                    const std::function<void()>& unblock) {
  PeerIoWatch::install_handler();
  std::atomic<bool> done{false};
  Outcome outcome;
  std::thread worker([&] {
    watch.bind_to_current_thread();
    {
      const PeerIoWatch::Call call;
      outcome.result = io();
      outcome.error = errno;
    }
    done.store(true);
  });
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done.load() && std::chrono::steady_clock::now() < give_up) {
    watch.check();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!done.load()) unblock();
  worker.join();
  return outcome;
}

TEST(PeerIoWatch, AReadThatSleepsIsInterrupted) {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC));  // blocking, counter zero
  ASSERT_TRUE(fd.valid());
  PeerIoWatch watch;
  std::uint64_t value = 0;
  const Outcome o = run_watched(
      watch, [&] { return ::read(fd.get(), &value, sizeof value); },
      [&] {
        const std::uint64_t one = 1;
        (void)::write(fd.get(), &one, sizeof one);
      });
  EXPECT_EQ(o.result, -1);
  EXPECT_EQ(o.error, EINTR);
  EXPECT_GE(watch.interrupts(), 1u);
}

TEST(PeerIoWatch, AWriteThatSleepsIsInterrupted) {
  UniqueFd fd(::eventfd(0, EFD_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  const std::uint64_t full = 0xfffffffffffffffe;  // the largest count: one more would sleep
  ASSERT_EQ(::write(fd.get(), &full, sizeof full), static_cast<ssize_t>(sizeof full));
  PeerIoWatch watch;
  const std::uint64_t one = 1;
  const Outcome o = run_watched(
      watch, [&] { return ::write(fd.get(), &one, sizeof one); },
      [&] {
        std::uint64_t value = 0;
        (void)::read(fd.get(), &value, sizeof value);
      });
  EXPECT_EQ(o.result, -1);
  EXPECT_EQ(o.error, EINTR);
  EXPECT_GE(watch.interrupts(), 1u);
}

TEST(PeerIoWatch, TheSignalOutsideASleepingCallHarmsNothing) {
  // What check() may send just after a call ended: calls on non-blocking fds
  // never sleep, so the signal interrupts none of them.
  UniqueFd fd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  ASSERT_TRUE(fd.valid());
  PeerIoWatch watch;
  PeerIoWatch::install_handler();
  std::atomic<bool> bound{false};
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::atomic<long> rounds{0};
  std::thread worker([&] {
    watch.bind_to_current_thread();
    bound.store(true);
    while (!stop.load()) {
      const PeerIoWatch::Call call;
      const std::uint64_t one = 1;
      std::uint64_t value = 0;
      if (::write(fd.get(), &one, sizeof one) != sizeof one) failures.fetch_add(1);
      if (::read(fd.get(), &value, sizeof value) != sizeof value) failures.fetch_add(1);
      rounds.fetch_add(1);
    }
  });
  while (!bound.load()) std::this_thread::yield();
  int sent = 0;
  for (; sent < 200 && ::pthread_kill(worker.native_handle(), PeerIoWatch::kSignal) == 0; ++sent)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  stop.store(true);
  worker.join();
  EXPECT_EQ(sent, 200);
  EXPECT_GT(rounds.load(), 0);
  EXPECT_EQ(failures.load(), 0);
}

TEST(PeerIoWatch, ACallThatRunsLongIsNotInterrupted) {
  // A call open across many checks whose thread is running, as one preempted
  // on a loaded node is (state R): it does not wait for the peer. Before the
  // watch read the thread's state, the second check interrupted it.
  PeerIoWatch watch;
  const Outcome o = run_watched(
      watch,
      [] {
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
        while (std::chrono::steady_clock::now() < until) {
        }
        return ssize_t{0};
      },
      [] {});
  EXPECT_EQ(o.result, 0);
  EXPECT_EQ(watch.interrupts(), 0u);
}

}  // namespace
