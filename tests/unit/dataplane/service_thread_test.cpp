// Service threads for real: ports on different threads, frames crossing
// through mailboxes, threads that sleep and are woken by kicks and commands.

#include "dataplane/service_thread.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <atomic>
#include <chrono>
#include <sstream>
#include <future>
#include <optional>
#include <thread>

#include "dataplane/dataplane.hpp"
#include "sys/cpu_budget.hpp"
#include "dataplane/guest_port.hpp"
#include "attached_guest.hpp"
#include "net_test_guest.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::dataplane {
namespace {

using namespace std::chrono_literals;
using test::Attached;
using test::eventually;
using test::NetTestGuest;
using test::options;

const std::uint8_t kMacA[6] = {0x52, 0x54, 0, 0, 1, 0xa};
const std::uint8_t kMacB[6] = {0x52, 0x54, 0, 0, 1, 0xb};

TEST(ServiceThread, FramesCrossThreadsThroughMailboxes) {
  Dataplane dp(options(2, 50));
  Attached a(dp, 0, kMacA), b(dp, 1, kMacB);
  b.guest.post_rx(200);
  a.guest.post_rx(200);
  for (int i = 0; i < 100; ++i) a.guest.send(test::udp_frame(kMacB, kMacA, 64));
  for (int i = 0; i < 50; ++i) b.guest.send(test::udp_frame(kMacA, kMacB, 64));
  std::size_t to_b = 0, to_a = 0;
  ASSERT_TRUE(eventually([&] {
    to_b += b.guest.received().size();
    to_a += a.guest.received().size();
    return to_b == 100 && to_a == 50;
  })) << to_b
      << " " << to_a;
  EXPECT_EQ(a.port.counters().rx_packets.get(), 100u);
  EXPECT_EQ(b.port.counters().tx_packets.get(), 100u);
}

TEST(ServiceThread, SleepingThreadIsWokenByEveryKickWithoutLosingOne) {
  Dataplane dp(options(1, 0));  // pure event mode
  Attached a(dp, 0, kMacA), b(dp, 0, kMacB);
  b.guest.post_rx(256);
  for (int i = 0; i < 200; ++i) {
    ASSERT_TRUE(
        eventually([&] { return dp.thread(0).state() == ServiceThread::State::kSleeping; }));
    a.guest.send(test::udp_frame(kMacB, kMacA, 64));  // adds the chain, then kicks
    ASSERT_TRUE(eventually([&] { return b.guest.received().size() == 1; })) << "frame " << i;
  }
  EXPECT_GE(dp.thread(0).counters().sleeps.get(), 200u);
  EXPECT_GE(a.port.counters().kicks.get(), 1u);
}

TEST(ServiceThread, SleepingThreadWakesForFramesFromAnotherThread) {
  Dataplane dp(options(2, 0));
  Attached a(dp, 0, kMacA), b(dp, 1, kMacB);
  b.guest.post_rx(256);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(
        eventually([&] { return dp.thread(1).state() == ServiceThread::State::kSleeping; }));
    a.guest.send(test::udp_frame(kMacB, kMacA, 64));
    ASSERT_TRUE(eventually([&] { return b.guest.received().size() == 1; })) << "frame " << i;
  }
}

TEST(ServiceThread, GuestNotificationsAreSuppressedWhileBusyAndReEnabledBeforeSleep) {
  Dataplane dp(options(1, 0));
  Attached a(dp, 0, kMacA);
  ASSERT_TRUE(eventually([&] { return dp.thread(0).state() == ServiceThread::State::kSleeping; }));
  EXPECT_EQ(a.guest.tx.used_flags() & virtio::kUsedFlagNoNotify, 0) << "kicks wanted while asleep";
}

TEST(ServiceThread, HeldFramesGoOutWhenTheSleepingGuestRefillsAndKicks) {
  Dataplane dp(options(1, 0));
  Attached a(dp, 0, kMacA), b(dp, 0, kMacB);
  a.guest.send(test::udp_frame(kMacB, kMacA, 64));
  ASSERT_TRUE(eventually([&] { return b.port.held() == 1; }));
  ASSERT_TRUE(eventually([&] { return dp.thread(0).state() == ServiceThread::State::kSleeping; }));
  EXPECT_EQ(b.guest.rx.used_flags() & virtio::kUsedFlagNoNotify, 0)
      << "the guest is asked to kick when it posts receive buffers";
  b.guest.post_rx(4);
  NetTestGuest::kick(b.guest.rx_kick);
  ASSERT_TRUE(eventually([&] { return b.guest.received().size() == 1; }));
  EXPECT_EQ(b.port.held(), 0u);
}

TEST(ServiceThread, CommandEndsBusyPollingAndRunsPromptly) {
  Dataplane dp(options(1, 100000));  // 100 ms of busy polling
  std::atomic<bool> ran{false};
  dp.thread(0).call([&] { ran = true; });
  EXPECT_TRUE(ran);
  // And a tunables change takes effect on the running thread.
  Tunables t;
  t.busy_poll_us = 0;
  dp.set_tunables(t);
  EXPECT_EQ(dp.thread(0).busy_poll_us(), 0u);
  EXPECT_TRUE(eventually([&] { return dp.thread(0).state() == ServiceThread::State::kSleeping; }));
}

TEST(ServiceThread, WhatACommandCostsTheThreadIsChargedToItsCaller) {
  Dataplane dp(options(1, 0));
  const auto before = sys::thread_delegated_cpu_time();
  dp.thread(0).call([] {
    const auto start = sys::thread_cpu_time();
    while (sys::thread_cpu_time() - start < 30ms) {
    }
  });
  EXPECT_GE(sys::thread_delegated_cpu_time() - before, 30ms);
}

TEST(ServiceThread, AWaitBehindTheThreadsOtherWorkIsNotChargedToTheCaller) {
  // What a frontend's command waits for -- the thread's burst for other
  // ports, or a node too loaded to run it -- is not what the frontend costs.
  // Before, the whole wall-clock wait was charged: a guest negotiating on a
  // loaded node was throttled for seconds.
  Dataplane dp(options(1, 0));
  dp.thread(0).post([] { std::this_thread::sleep_for(300ms); });  // someone else's work
  const auto before = sys::thread_delegated_cpu_time();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(dp.thread(0).call([] { return 7; }), 7);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms) << "the call did not wait";
  EXPECT_LT(sys::thread_delegated_cpu_time() - before, 50ms);
}

// A port whose polls take frames `rounds` times, each poll costing `each` of
// the thread's time; then idle (the thread wakes every millisecond for it).
class BusyForAWhile final : public Port {
 public:
  BusyForAWhile(std::uint32_t id, int rounds, std::chrono::microseconds each)
      : Port(id, "busy", PortKind::kGuest), left_(rounds), each_(each) {}
  unsigned poll(Forwarder&) override {
    if (left_.load() == 0) return 0;
    const auto until = std::chrono::steady_clock::now() + each_;
    while (std::chrono::steady_clock::now() < until) {
    }
    left_.fetch_sub(1);
    return 1;
  }
  void deliver(const Frame&) override {}
  void end_burst() override {}
  bool prepare_sleep() override { return left_.load() != 0; }
  void after_wake() override {}
  void wait_fds(std::vector<WaitFd>&, bool& needs_timer) override { needs_timer = true; }
  int left() const { return left_.load(); }

 private:
  std::atomic<int> left_;
  std::chrono::microseconds each_;
};

TEST(ServiceThread, EachPortIsChargedWhatPollingItCostsTheThread) {
  // What a rebalancer and an operator read (busy_seconds_total): a port
  // that works is charged its polls, one that never takes a frame nothing,
  // and the thread at least the sum of its ports.
  Dataplane dp(options(1, 50));
  BusyForAWhile busy(dp.allocate_port_id(), 200, 200us);
  BusyForAWhile idle(dp.allocate_port_id(), 0, 0us);
  dp.attach(idle, 0);
  dp.attach(busy, 0);
  ASSERT_TRUE(eventually([&] { return busy.left() == 0; }));
  std::this_thread::sleep_for(20ms);  // idle rounds after the work
  dp.detach(busy);
  dp.detach(idle);
  const auto charged = std::chrono::nanoseconds(busy.counters().busy_ns.get());
  EXPECT_GE(charged, 200 * 200us);
  EXPECT_LT(charged, 200 * 200us + 200ms) << "idle rounds were charged";
  EXPECT_EQ(idle.counters().busy_ns.get(), 0u);
  const auto thread = std::chrono::nanoseconds(dp.thread(0).counters().busy_ns.get());
  EXPECT_GE(thread, charged);
}

TEST(ServiceThread, AThreadStuckInARoundMissesItsHeartbeatAndTheWatcherSaysSo) {
  // A round that does not end (here a command spinning for 1.5 s; in the
  // field a ring walk gone wrong, or a thread starved of CPU), seen without
  // anyone asking anything of the thread, with what the kernel saw it do.
  // The other thread, asleep all the while, owes nothing.
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink));
  {
    Dataplane dp(options(2, 0));
    dp.watch_threads();
    ASSERT_TRUE(
        eventually([&] { return dp.thread(1).state() == ServiceThread::State::kSleeping; }));
    std::atomic<bool> seen_unhealthy{false};
    dp.thread(0).post([] {
      const auto start = sys::thread_cpu_time();
      while (sys::thread_cpu_time() - start < 1500ms) {
      }
    });
    EXPECT_TRUE(eventually([&] {
      if (dp.thread(0).heartbeat().missing_now()) seen_unhealthy = true;
      return dp.thread(0).heartbeat().misses() == 1;
    }));
    EXPECT_TRUE(eventually([&] {
      if (dp.thread(0).heartbeat().missing_now()) seen_unhealthy = true;
      return dp.thread(0).heartbeat().silence() == 0ms &&
             dp.thread(0).heartbeat().longest_silence() >= 1000ms;
    })) << "it runs rounds again";
    EXPECT_TRUE(seen_unhealthy.load());
    EXPECT_EQ(dp.thread(0).heartbeat().misses(), 1u) << "one silence, one miss";
    EXPECT_EQ(dp.thread(1).heartbeat().misses(), 0u);
    EXPECT_EQ(dp.thread(1).heartbeat().longest_silence(), 0ms);
  }
  spdlog::set_default_logger(previous);
  EXPECT_NE(log.str().find("service thread 0: awake (busy) but no poll round for over 1000 ms"),
            std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("service thread 0: runs rounds again"), std::string::npos) << log.str();
  // What the kernel saw: the thread on a CPU (or waiting for one), and how
  // long it ran since it went silent -- a round that does not end, not a
  // thread asleep in a syscall.
  EXPECT_NE(log.str().find("kernel: state R (running or runnable); in the last "),
            std::string::npos)
      << log.str();
  EXPECT_EQ(log.str().find("it ran 0.0 ms"), std::string::npos) << log.str();
}

TEST(ServiceThread, ACallPastItsDeadlineGetsNothingAndTheThreadIsStalled) {
  Dataplane dp(options(1, 0));
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  dp.thread(0).post([released] { released.wait(); });  // the thread is stuck
  const auto r = dp.thread(0).call([]() -> std::optional<std::uint16_t> { return 7; });
  EXPECT_FALSE(r.has_value()) << "a stop_queue here has no index to give";
  EXPECT_TRUE(dp.thread(0).stalled());
  EXPECT_STREQ(dp.thread(0).reported_state(), "stalled");
  // Later calls do not wait again.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(dp.thread(0).call([]() -> std::optional<std::uint16_t> { return 7; }));
  EXPECT_LT(std::chrono::steady_clock::now() - start, ServiceThread::kCallDeadline);
  release.set_value();  // the thread goes on, and can be stopped
}

// A TSO frame from a guest reaches another guest the same whether they share
// a service thread or not: whole through the mailbox (longer than any MTU
// frame), then as one GSO frame to a guest that takes TSO and as segments,
// cut by its own port, to one that does not. Parameter: the receivers' thread
// (the sender is on thread 0).
class GsoAcrossThreads : public ::testing::TestWithParam<std::uint16_t> {};

TEST_P(GsoAcrossThreads, ATsoFrameArrivesAsOnTheSendersOwnThread) {
  Dataplane dp(options(2, 0));
  const std::uint64_t tso = test::default_features() | virtio::bit(virtio::Feature::kNetCsum) |
                            virtio::bit(virtio::Feature::kNetHostTso4);
  const std::uint64_t takes_tso = test::default_features() |
                                  virtio::bit(virtio::Feature::kNetGuestCsum) |
                                  virtio::bit(virtio::Feature::kNetGuestTso4);
  const std::uint8_t kMacC[6] = {0x52, 0x54, 0, 0, 1, 0xc};
  Attached a(dp, 0, kMacA, tso, 9600);
  Attached b(dp, GetParam(), kMacB, test::default_features(), 9600);  // no TSO
  Attached c(dp, GetParam(), kMacC, takes_tso, 9600);
  b.guest.post_rx(256, 9700);
  c.guest.post_rx(8, 65600);
  // 7 segments of 9500 bytes (66,500 bytes of payload would be too many: 6
  // full ones and a short one, 64,000 bytes in all).
  const virtio::NetHeader h = test::tso4_header(9500);
  const auto to_b = test::tcp_frame(kMacB, kMacA, 64000);
  const auto to_c = test::tcp_frame(kMacC, kMacA, 64000);
  ASSERT_GT(to_b.size(), 9216u) << "longer than the mailbox's slots once were";
  a.guest.send(to_b, h, 3);
  a.guest.send(to_c, h, 3);
  ASSERT_TRUE(eventually([&] { return a.guest.tx_completed() == 2; }));
  std::vector<test::ReceivedFrame> at_b, at_c;
  EXPECT_TRUE(eventually([&] {
    for (auto& f : b.guest.received()) at_b.push_back(std::move(f));
    for (auto& f : c.guest.received()) at_c.push_back(std::move(f));
    return at_b.size() == 7 && at_c.size() == 1;
  })) << at_b.size()
      << " segments at b, " << at_c.size() << " frames at c";
  std::size_t payload = 0;
  for (const auto& f : at_b) {
    EXPECT_EQ(f.header.gso_type, virtio::NetHeader::kGsoNone);
    payload += f.bytes.size() - 54;
  }
  EXPECT_EQ(payload, 64000u);
  ASSERT_EQ(at_c.size(), 1u);
  EXPECT_EQ(at_c[0].header.gso_type, virtio::NetHeader::kGsoTcpv4);
  EXPECT_EQ(at_c[0].header.gso_size, 9500);
  EXPECT_EQ(at_c[0].bytes.size(), to_c.size());
  EXPECT_EQ(b.port.counters().gso_segments.get(), 7u) << "cut by the receiving port";
  EXPECT_EQ(c.port.counters().gso_tx.get(), 1u);
  for (std::size_t r = 0; r < kDropReasons; ++r)
    EXPECT_EQ(a.port.counters().drops[r].get(), 0u) << to_string(static_cast<DropReason>(r));
}

INSTANTIATE_TEST_SUITE_P(ReceiversThread, GsoAcrossThreads, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<std::uint16_t>& info) {
                           return info.param == 0 ? std::string("TheSameThread")
                                                  : std::string("AnotherThread");
                         });

TEST(ServiceThread, DetachedPortIsNoLongerReachable) {
  Dataplane dp(options(2, 0));
  auto a = std::make_unique<Attached>(dp, 0, kMacA);
  {
    Attached b(dp, 1, kMacB);
    b.guest.post_rx(4);
  }
  a->guest.send(test::udp_frame(kMacB, kMacA, 64));
  ASSERT_TRUE(eventually([&] { return a->guest.tx_completed() == 1; }));
  EXPECT_EQ(
      a->port.counters().drops[static_cast<std::size_t>(DropReason::kUnknownDestination)].get(),
      1u);
}

// A port with one sleep-only fd (as an uplink queue's AF_XDP socket), busy
// while `busy` is set, whose fd can be closed and replaced on its thread.
class SleepOnlyFdPort : public Port {
 public:
  explicit SleepOnlyFdPort(std::uint32_t id) : Port(id, "sleep-only", PortKind::kUplink) {}
  unsigned poll(Forwarder&) override { return busy.load(std::memory_order_relaxed) ? 1 : 0; }
  void deliver(const Frame&) override {}
  void end_burst() override {}
  bool prepare_sleep() override { return false; }
  void after_wake() override {}
  void wait_fds(std::vector<WaitFd>& out, bool&) override {
    if (fd) out.push_back({fd.get(), EPOLLIN, false, this, true});
  }
  // As an uplink queue unbound and bound again: the old fd closed first.
  void replace_fd() {
    fd.reset();
    fd.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    wait_fds_changed();
  }
  void wake() const {
    const std::uint64_t one = 1;
    ASSERT_EQ(::write(fd.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
  }
  std::atomic<bool> busy{false};
  sys::UniqueFd fd{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
};

// The sleep-only fds are unwatched once the thread has been busy a while.
// If a port closed one meanwhile, that number is no longer the port's: the
// thread rebuilds its set instead of asking epoll to remove a closed fd
// (which failed with EBADF at every uplink re-bind under traffic, and once
// logged, hid every later epoll error).
TEST(ServiceThread, AFdClosedWhileTheThreadIsBusyIsNotUnwatchedByItsNumber) {
  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  const auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  {
    Dataplane dp(options(1, 0));
    SleepOnlyFdPort port(dp.allocate_port_id());
    dp.attach(port, 0);
    dp.thread(0).call([&] { dp.thread(0).wait_fds_changed(); });
    for (int round = 0; round < 20; ++round) {
      ASSERT_TRUE(
          eventually([&] { return dp.thread(0).state() == ServiceThread::State::kSleeping; }));
      port.busy = true;  // asleep with the fd watched; woken by it, and busy
      port.wake();
      dp.thread(0).call([&] { port.replace_fd(); });
      std::this_thread::sleep_for(2ms);  // busy past the unwatch delay (200 us)
      port.busy = false;
    }
    dp.detach(port);
  }
  spdlog::set_default_logger(previous);
  EXPECT_EQ(log.str().find("epoll_ctl"), std::string::npos) << log.str();
}

}  // namespace
}  // namespace xdpvhost::dataplane
