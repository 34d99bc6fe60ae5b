#include "sys/cpu_budget.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace xdpvhost::sys {
namespace {

using namespace std::chrono_literals;
using Clock = CpuBudget::Clock;

TEST(CpuBudget, AClientWithinItsBurstIsServedAtOnce) {
  const auto t0 = Clock::now();
  CpuBudget b({10ms, 0.05}, t0);
  b.charge(9ms);
  EXPECT_EQ(b.wait(t0), 0ns);
  b.charge(1ms);
  EXPECT_EQ(b.wait(t0), 0ns);  // exactly used up: still served
}

TEST(CpuBudget, ADebtIsRepaidAtTheShareOfWallTime) {
  const auto t0 = Clock::now();
  CpuBudget b({10ms, 0.05}, t0);
  b.charge(12ms);  // 2 ms in debt: 40 ms of wall time at 5 %
  EXPECT_EQ(b.wait(t0), 40ms);
  EXPECT_EQ(b.wait(t0 + 20ms), 20ms);
  EXPECT_EQ(b.wait(t0 + 40ms), 0ns);
}

TEST(CpuBudget, CreditNeverExceedsTheBurst) {
  const auto t0 = Clock::now();
  CpuBudget b({10ms, 0.5}, t0);
  EXPECT_EQ(b.wait(t0 + 1h), 0ns);
  EXPECT_EQ(b.balance(), 10ms);
  b.charge(11ms);
  EXPECT_EQ(b.wait(t0 + 1h), 2ms);  // 1 ms of debt at 50 %
}

TEST(CpuBudget, TimeGoingBackwardsCreditsNothing) {
  const auto t0 = Clock::now();
  CpuBudget b({10ms, 0.05}, t0);
  b.charge(11ms);
  EXPECT_EQ(b.wait(t0 - 1s), 20ms);
  EXPECT_EQ(b.balance(), -1ms);
}

TEST(ThreadCpuTime, GrowsWithWorkDoneAndNotWithSleep) {
  const auto c0 = thread_cpu_time();
  volatile unsigned sink = 0;
  for (unsigned i = 0; i < 20'000'000; ++i) sink = sink + i;
  const auto c1 = thread_cpu_time();
  EXPECT_GT(c1, c0);
  std::this_thread::sleep_for(50ms);
  EXPECT_LT(thread_cpu_time() - c1, 40ms);
}

TEST(TurnCharge, ChargesCpuTimeAndWorkHandedToOtherThreadsNotSleep) {
  CpuBudget budget({100ms, 0.5}, Clock::now());
  const auto before = budget.balance();
  {
    const TurnCharge charge{budget};
    std::this_thread::sleep_for(30ms);    // no work of anyone's
    add_thread_delegated_cpu_time(40ms);  // as ServiceThread::call reports a command's cost
  }
  const auto charged = before - budget.balance();
  EXPECT_GE(charged, 40ms);
  EXPECT_LT(charged, 60ms) << "the sleep was charged";
}

}  // namespace
}  // namespace xdpvhost::sys
