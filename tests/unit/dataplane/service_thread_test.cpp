// Service threads for real: ports on different threads, frames crossing
// through mailboxes, threads that sleep and are woken by kicks and commands.

#include "dataplane/service_thread.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <optional>
#include <thread>

#include "dataplane/dataplane.hpp"
#include "sys/cpu_budget.hpp"
#include "dataplane/guest_port.hpp"
#include "net_test_guest.hpp"

namespace xdpvhost::dataplane {
namespace {

using namespace std::chrono_literals;
using test::NetTestGuest;

const std::uint8_t kMacA[6] = {0x52, 0x54, 0, 0, 1, 0xa};
const std::uint8_t kMacB[6] = {0x52, 0x54, 0, 0, 1, 0xb};

// Waits (up to a generous deadline, so a broken build fails instead of
// hanging) until `done` holds.
template <class Fn>
bool eventually(Fn done) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(100us);
  }
  return done();
}

struct Attached {
  Attached(Dataplane& dp, std::uint16_t thread, const std::uint8_t mac[6],
           std::uint64_t features = test::default_features(), std::uint32_t mtu = 1500)
      : dp(dp),
        thread(thread),
        guest(features),
        port(dp.allocate_port_id(), "p", Port::kNoUplinkId,
             GuestPort::Options{mtu, {}, MacPolicy::kFixed, net::MacAddress::from(mac)}) {
    dp.attach(port, thread, net::MacAddress::from(mac));
    for (std::uint32_t v : {0u, 1u}) {
      auto start = guest.start(v);
      dp.thread(thread).call([&] {
        port.start_queue(std::move(start));
        dp.thread(thread).wait_fds_changed();
      });
    }
  }
  ~Attached() {
    for (std::uint32_t v : {0u, 1u}) dp.thread(thread).call([&] { port.stop_queue(v); });
    dp.detach(port);
  }
  Dataplane& dp;
  std::uint16_t thread;
  NetTestGuest guest;
  GuestPort port;
};

Dataplane::Options options(std::uint16_t threads, std::uint32_t busy_poll_us) {
  Dataplane::Options o;
  o.threads = threads;
  o.tunables.busy_poll_us = busy_poll_us;
  return o;
}

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

TEST(ServiceThread, ACallsWaitCountsAsTheCallersBlockedTime) {
  Dataplane dp(options(1, 0));
  const auto before = sys::thread_blocked_time();
  dp.thread(0).call([] { std::this_thread::sleep_for(30ms); });
  EXPECT_GE(sys::thread_blocked_time() - before, 30ms);
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
  const auto before = sys::thread_blocked_time();
  EXPECT_FALSE(dp.thread(0).call([]() -> std::optional<std::uint16_t> { return 7; }));
  EXPECT_LT(sys::thread_blocked_time() - before, ServiceThread::kCallDeadline);
  release.set_value();  // the thread goes on, and can be stopped
}

TEST(ServiceThread, GsoSegmentsTooLongForAMailboxAreDroppedAndCounted) {
  Dataplane dp(options(2, 0));
  const std::uint64_t tso = test::default_features() | virtio::bit(virtio::Feature::kNetCsum) |
                            virtio::bit(virtio::Feature::kNetHostTso4);
  Attached a(dp, 0, kMacA, tso, 9600);
  Attached b(dp, 1, kMacB, test::default_features(), 9600);
  b.guest.post_rx(8, 9600);
  // Segments of 9554 bytes: more than a mailbox slot (Mailbox::kMaxFrame) holds.
  const virtio::NetHeader h = test::tso4_header(9500);
  a.guest.send(test::tcp_frame(kMacB, kMacA, 20000), h, 3);
  ASSERT_TRUE(eventually([&] { return a.guest.tx_completed() == 1; }));
  EXPECT_TRUE(eventually([&] {
    return a.port.counters().drops[static_cast<std::size_t>(DropReason::kOversize)].get() == 1;
  })) << "lost without a reason";
  EXPECT_TRUE(b.guest.received().empty());
}

// A GSO frame for a guest on another thread is cut into segments into the
// mailbox that every sender on this thread shares toward that thread: one
// frame takes at most Mailbox::kMaxShare slots. One of 200 segments (gso_size
// 50, the floor is 48) is dropped with its own reason; one of 150 arrives,
// every segment of it.
TEST(ServiceThread, AFrameTakesNoMoreThanItsShareOfAMailbox) {
  Dataplane dp(options(2, 0));
  const std::uint64_t tso = test::default_features() | virtio::bit(virtio::Feature::kNetCsum) |
                            virtio::bit(virtio::Feature::kNetHostTso4);
  Attached a(dp, 0, kMacA, tso);
  Attached b(dp, 1, kMacB);
  b.guest.post_rx(256);
  auto send = [&](std::uint16_t gso_size, std::uint32_t segments) {
    const virtio::NetHeader h = test::tso4_header(gso_size);
    const auto frame = test::tcp_frame(kMacB, kMacA, std::size_t{gso_size} * segments);
    ASSERT_GT(frame.size(), Mailbox::kMaxFrame) << "segmented on the way into the mailbox";
    a.guest.send(frame, h, 3);
  };
  auto drops = [&](DropReason r) {
    return a.port.counters().drops[static_cast<std::size_t>(r)].get();
  };
  static_assert(Mailbox::kMaxShare >= 150 && Mailbox::kMaxShare < 200);
  send(50, 200);
  ASSERT_TRUE(eventually([&] { return a.guest.tx_completed() == 1; }));
  EXPECT_TRUE(eventually([&] { return drops(DropReason::kMailboxShare) == 1; }));
  EXPECT_TRUE(b.guest.received().empty());
  send(62, 150);
  ASSERT_TRUE(eventually([&] { return a.guest.tx_completed() == 2; }));
  std::size_t received = 0;
  EXPECT_TRUE(eventually([&] { return (received += b.guest.received().size()) == 150; }))
      << received;
  EXPECT_EQ(drops(DropReason::kMailboxShare), 1u);
  EXPECT_EQ(drops(DropReason::kMailboxFull), 0u);
}

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

}  // namespace
}  // namespace xdpvhost::dataplane
