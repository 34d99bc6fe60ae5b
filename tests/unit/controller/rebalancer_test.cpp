// The rebalancer on a real Dataplane: service threads measure what ports
// that burn a set share of the wall clock cost them, and the rebalancer
// moves the queue that balances two threads, then leaves them be; with
// rebalance off it never looks; a thousand looks hold nothing more.

#include "controller/rebalancer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "sys/resource_ledger.hpp"

namespace xdpvhost::controller {
namespace {

using namespace std::chrono_literals;
using dataplane::Dataplane;
using dataplane::MoveOutcome;

// A port whose polls take `share` of the wall-clock time, in 1 ms slices:
// a queue whose load the test knows. A slice is slept through, not spun:
// the service thread measures wall-clock time either way, and a sleep is
// not stretched by a busy machine (CI runs two tests at once on two cores)
// the way a spin that is preempted is.
class Burner final : public dataplane::Port {
 public:
  Burner(std::uint32_t id, double share)
      : Port(id, "burner", dataplane::PortKind::kGuest), share_(share) {}
  unsigned poll(dataplane::Forwarder&) override {
    const auto now = std::chrono::steady_clock::now();
    if (share_ <= 0 || now < next_) return 0;
    std::this_thread::sleep_for(kSlice);
    // A thread that fell behind catches up for 2 ms at most: the share
    // holds over any interval.
    next_ = std::max(next_ + std::chrono::duration_cast<std::chrono::nanoseconds>(kSlice / share_),
                     now - 2ms);
    return 1;
  }
  void deliver(const dataplane::Frame&) override {}
  void end_burst() override {}
  bool prepare_sleep() override { return share_ > 0; }  // keeps polling: the slices are due
  void after_wake() override {}
  void wait_fds(std::vector<dataplane::WaitFd>&, bool& needs_timer) override { needs_timer = true; }

 private:
  static constexpr auto kSlice = 1ms;
  const double share_;
  std::chrono::steady_clock::time_point next_ = std::chrono::steady_clock::now();
};

Dataplane::Options two_threads(std::uint32_t threshold_pct) {
  Dataplane::Options o;
  o.threads = 2;
  o.tunables.busy_poll_us = 0;
  o.tunables.rebalance_threshold_pct = threshold_pct;
  return o;
}

// Burners attached to the threads given, detached before they go.
class Burners {
 public:
  Burners(Dataplane& dp, const std::vector<std::pair<double, std::uint16_t>>& shares) : dp_(dp) {
    for (const auto& [share, thread] : shares) {
      ports_.push_back(std::make_unique<Burner>(dp.allocate_port_id(), share));
      dp.attach(*ports_.back(), thread);
    }
  }
  ~Burners() {
    for (auto& p : ports_) dp_.detach(*p);
  }
  Burner& operator[](std::size_t i) { return *ports_[i]; }

 private:
  Dataplane& dp_;
  std::vector<std::unique_ptr<Burner>> ports_;
};

TEST(Rebalancer, MovesTheQueueThatBalancesTwoThreadsThenLeavesThemBe) {
  // Thread 0 carries queues of 25 % and four of 5 % of a core (45 %, above
  // the threshold of 20 %), thread 1 none. Moving the 25 % one leaves the
  // busiest thread at 25 % (44 % less: above the margin of 25 %), a 5 % one
  // at 40 % (11 % less): the first is moved, to thread 1. Then moving the
  // busiest thread's queue elsewhere only moves the peak: nothing moves
  // again.
  Dataplane dp(two_threads(20));
  Burners q(dp, {{0.25, 0}, {0.05, 0}, {0.05, 0}, {0.05, 0}, {0.05, 0}});
  boost::asio::io_context io;
  Rebalancer rebalancer(io, dp);
  rebalancer.follow_tunables();  // the baseline; its timer is not run here
  std::this_thread::sleep_for(600ms);
  const auto move = rebalancer.look();
  ASSERT_TRUE(move.has_value()) << "nothing moved";
  EXPECT_EQ(move->outcome, MoveOutcome::kMoved);
  EXPECT_EQ(move->from, 0);
  EXPECT_EQ(dp.thread_of(q[0]), 1) << "not the 25 % queue";
  for (std::size_t i = 1; i < 5; ++i) EXPECT_EQ(dp.thread_of(q[i]), 0) << "queue " << i;
  for (int i = 0; i < 4; ++i) {
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(rebalancer.look().has_value()) << "look " << i << " moved a queue again";
  }
  EXPECT_EQ(rebalancer.looks(), 5u);
  EXPECT_EQ(rebalancer.moves(MoveOutcome::kMoved), 1u);
  EXPECT_EQ(dp.moves(MoveOutcome::kMoved), 1u);
}

TEST(Rebalancer, BelowTheThresholdNothingMoves) {
  // Two queues of 10 % on thread 0, the default threshold (90 %).
  Dataplane dp(two_threads(dataplane::Tunables{}.rebalance_threshold_pct));
  Burners q(dp, {{0.1, 0}, {0.1, 0}});
  boost::asio::io_context io;
  Rebalancer rebalancer(io, dp);
  rebalancer.follow_tunables();
  std::this_thread::sleep_for(400ms);
  EXPECT_FALSE(rebalancer.look().has_value());
  EXPECT_EQ(dp.thread_of(q[0]), 0);
  EXPECT_EQ(dp.thread_of(q[1]), 0);
}

TEST(Rebalancer, ItsTimerLooksEveryIntervalWhileAutoAndNotAtAllWhenOff) {
  Dataplane::Options o = two_threads(90);
  o.tunables.rebalance_interval_s = 1;
  Dataplane dp(o);
  boost::asio::io_context io;
  Rebalancer rebalancer(io, dp);
  rebalancer.follow_tunables();
  io.run_for(2500ms);
  EXPECT_EQ(rebalancer.looks(), 2u);

  dataplane::Tunables off = o.tunables;
  off.rebalance = dataplane::RebalanceMode::kOff;
  dp.set_tunables(off);
  rebalancer.follow_tunables();
  io.restart();
  io.run_for(1500ms);
  EXPECT_EQ(rebalancer.looks(), 2u) << "looked while off";

  dp.set_tunables(o.tunables);
  rebalancer.follow_tunables();
  rebalancer.follow_tunables();  // unchanged: the running interval goes on
  io.restart();
  io.run_for(1500ms);
  EXPECT_EQ(rebalancer.looks(), 3u);
  rebalancer.stop();
  io.restart();
  EXPECT_EQ(io.run_for(1500ms), 1u) << "the cancelled wait, and nothing after it";
}

TEST(Rebalancer, AThousandLooksHoldNothingMore) {
  // A periodic path of the daemon (every rebalance_interval_s for months):
  // looks over ten idle queues and two threads, none above the threshold.
  Dataplane dp(two_threads(90));
  Burners q(dp, {{0, 0}, {0, 1}, {0, 0}, {0, 1}, {0, 0}, {0, 1}, {0, 0}, {0, 1}, {0, 0}, {0, 1}});
  boost::asio::io_context io;
  Rebalancer rebalancer(io, dp);
  rebalancer.follow_tunables();
  rebalancer.look();
  const sys::ResourceLedger before = sys::take_resource_ledger();
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(rebalancer.look().has_value());
  const sys::ResourceLedger after = sys::take_resource_ledger();
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.mapped.count, before.mapped.count);
  EXPECT_EQ(after.threads, before.threads);
  EXPECT_LE(after.heap.in_use, before.heap.in_use + 4096);
  EXPECT_EQ(rebalancer.looks(), 1001u);
}

}  // namespace
}  // namespace xdpvhost::controller
