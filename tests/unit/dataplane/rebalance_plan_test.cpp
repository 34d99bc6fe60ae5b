// The rebalancer's decision (plan_move), case by case: when nothing moves,
// which queue moves where, and that steady load does not move queues back
// and forth.

#include "dataplane/rebalance_plan.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

namespace xdpvhost::dataplane {
namespace {

constexpr RebalancePolicy kDefault{};  // threshold 0.9, margin 0.25

struct Case {
  const char* what;
  std::vector<double> threads;
  std::vector<QueueLoad> queues;
  RebalancePolicy policy;
  std::optional<std::size_t> queue;  // the queue expected to move, if any
  std::uint16_t to = 0;
};

class PlanMove : public testing::TestWithParam<Case> {};

TEST_P(PlanMove, MovesWhatTheRuleSays) {
  const Case& c = GetParam();
  const auto plan = plan_move(c.threads, c.queues, c.policy);
  if (!c.queue) {
    EXPECT_FALSE(plan.has_value()) << "moved queue " << plan->queue << " to " << plan->to;
    return;
  }
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->queue, *c.queue);
  EXPECT_EQ(plan->from, c.queues[*c.queue].thread);
  EXPECT_EQ(plan->to, c.to);
  EXPECT_LT(plan->busiest_after, plan->busiest_before);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PlanMove,
    testing::Values(
        Case{"one thread: nowhere to go", {1.0}, {{0, 0.5}, {0, 0.5}}, kDefault, {}, 0},
        Case{
            "the busiest below the threshold", {0.85, 0.0}, {{0, 0.5}, {0, 0.35}}, kDefault, {}, 0},
        Case{"idle", {0.0, 0.0}, {{0, 0.0}, {1, 0.0}}, kDefault, {}, 0},
        Case{"the heaviest queue when it leaves the lowest busiest load",
             {1.0, 0.0},
             {{0, 0.6}, {0, 0.3}, {0, 0.1}},
             kDefault,
             0,
             1},
        Case{"the queue that leaves the lowest busiest load, not the heaviest",
             {1.0, 0.5},
             {{0, 0.7}, {0, 0.25}, {1, 0.5}},
             kDefault,
             1,
             1},
        Case{"one queue on the busiest thread: moving it moves the peak",
             {0.95, 0.1},
             {{0, 0.95}, {1, 0.1}},
             kDefault,
             {},
             0},
        Case{
            "a gain below the margin", {1.0, 0.8}, {{0, 0.1}, {0, 0.9}, {1, 0.8}}, kDefault, {}, 0},
        Case{"the same gain with no margin",
             {1.0, 0.8},
             {{0, 0.1}, {0, 0.9}, {1, 0.8}},
             RebalancePolicy{0.9, 0.0},
             0,
             1},
        Case{"to the least loaded of three",
             {1.0, 0.6, 0.2},
             {{0, 0.5}, {0, 0.5}, {1, 0.6}, {2, 0.2}},
             kDefault,
             0,
             2},
        Case{"a third thread above the result bounds the gain",
             {1.0, 0.1, 0.9},
             {{0, 0.5}, {0, 0.5}, {2, 0.9}},
             kDefault,
             {},
             0},
        Case{"the busiest thread is the second one",
             {0.2, 1.0},
             {{0, 0.2}, {1, 0.5}, {1, 0.4}, {1, 0.1}},
             kDefault,
             2,
             0},
        Case{"idle queues are not moved", {1.0, 0.0}, {{0, 0.0}, {0, 0.9}}, kDefault, {}, 0},
        Case{"ties go to the lighter queue", {1.0, 0.0}, {{0, 0.6}, {0, 0.4}}, kDefault, 1, 1},
        Case{"threshold 0 moves at any load",
             {0.2, 0.0},
             {{0, 0.1}, {0, 0.1}},
             RebalancePolicy{0.0, 0.25},
             0,
             1}),
    [](const testing::TestParamInfo<Case>& info) {
      std::string name;
      for (const char* p = info.param.what; *p != 0; ++p)
        name += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
      return name;
    });

TEST(QueueLoads, AQueueThatOnlyReceivesIsChargedTheRestOfItsThreadByItsFrames) {
  // Thread 0: an uplink queue polled 40 % of the interval, delivering to a
  // guest queue on thread 1 through the mailbox. Thread 1 was busy 30 %, its
  // queues' polls 0 % and 5 %: the 25 % left is shared by the frames put into
  // them, 3 to 1. Thread 0's rest (10 %) goes to no queue: nothing was put
  // into its queue.
  const std::vector<std::uint64_t> threads{500, 300};
  const std::vector<QueueSample> queues{{0, 400, 0}, {1, 0, 3000}, {1, 50, 1000}};
  const auto loads = queue_loads(threads, queues, 1000.0);
  ASSERT_EQ(loads.size(), 3u);
  EXPECT_DOUBLE_EQ(loads[0].load, 0.4);
  EXPECT_DOUBLE_EQ(loads[1].load, 0.25 * 3 / 4);
  EXPECT_DOUBLE_EQ(loads[2].load, 0.05 + 0.25 / 4);
  EXPECT_EQ(loads[1].thread, 1);
}

TEST(QueueLoads, PollsMeasuredAboveTheThreadLeaveNoRestAndAnEmptySpanNoLoad) {
  // Each counter is read at its own moment: the polls may add up to a
  // little more than the thread.
  const std::vector<std::uint64_t> threads{100};
  const std::vector<QueueSample> queues{{0, 80, 10}, {0, 40, 10}};
  auto loads = queue_loads(threads, queues, 1000.0);
  EXPECT_DOUBLE_EQ(loads[0].load, 0.08);
  EXPECT_DOUBLE_EQ(loads[1].load, 0.04);
  loads = queue_loads(threads, queues, 0.0);
  EXPECT_DOUBLE_EQ(loads[0].load, 0.0);
}

TEST(PlanMoveSteadyLoad, SettlesAfterAFewMovesAndNeverMovesBack) {
  // Eight queues of unequal load all on thread 0 of two: the plan applied
  // until it stops moves some, each lowering the busiest load, then leaves
  // the queues where they are; no queue moves twice.
  std::vector<double> threads{0, 0};
  std::vector<QueueLoad> queues;
  for (double load : {0.30, 0.25, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05}) {
    queues.push_back({0, load});
    threads[0] += load;
  }
  std::vector<int> moved(queues.size(), 0);
  double busiest = threads[0];
  int moves = 0;
  while (auto plan = plan_move(threads, queues, RebalancePolicy{0.0, 0.05})) {
    ASSERT_LT(++moves, 10) << "still moving";
    ASSERT_LT(plan->busiest_after, busiest);
    busiest = plan->busiest_after;
    QueueLoad& q = queues[plan->queue];
    threads[q.thread] -= q.load;
    threads[plan->to] += q.load;
    q.thread = plan->to;
    ++moved[plan->queue];
  }
  EXPECT_GE(moves, 2);
  for (int m : moved) EXPECT_LE(m, 1);
  EXPECT_LT(std::max(threads[0], threads[1]), 0.7) << "from 1.2 on one thread";
}

}  // namespace
}  // namespace xdpvhost::dataplane
