// Heartbeat: a thread awake yet without a round for the deadline has missed
// it, once per silence; a thread asleep owes nothing. Times are given, not
// waited for.

#include "dataplane/heartbeat.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace {

using namespace std::chrono_literals;
using xdpvhost::dataplane::Heartbeat;

constexpr auto kCheck = 100ms;  // as the thread watcher checks

TEST(Heartbeat, AThreadThatBeatsBetweenChecksNeverMisses) {
  Heartbeat h;
  auto now = Heartbeat::Clock::time_point{} + 1h;
  for (int i = 0; i < 1000; ++i, now += kCheck) {
    h.beat();
    EXPECT_FALSE(h.check(false, now));
  }
  EXPECT_EQ(h.misses(), 0u);
  EXPECT_EQ(h.longest_silence(), 0ms);
}

TEST(Heartbeat, AThreadAsleepOwesNothing) {
  Heartbeat h;
  auto now = Heartbeat::Clock::time_point{} + 1h;
  for (int i = 0; i < 600; ++i, now += kCheck) EXPECT_FALSE(h.check(true, now));
  EXPECT_EQ(h.misses(), 0u);
  EXPECT_EQ(h.silence(), 0ms);
  // Awake again: the silence counts from the last check that saw it asleep,
  // not from its last beat a minute ago.
  EXPECT_FALSE(h.check(false, now));
  EXPECT_EQ(h.silence(), kCheck);
}

TEST(Heartbeat, ASilenceAwakeCountsOnceAndItsLengthIsKept) {
  Heartbeat h;
  auto now = Heartbeat::Clock::time_point{} + 1h;
  h.beat();
  EXPECT_FALSE(h.check(false, now));
  int found = 0;
  for (int i = 0; i < 50; ++i) {  // 5 s without a beat
    now += kCheck;
    if (h.check(false, now)) {
      ++found;
      EXPECT_GE(h.silence(), Heartbeat::kDeadline);
      EXPECT_LT(h.silence(), Heartbeat::kDeadline + kCheck) << "found a check late";
    }
  }
  EXPECT_EQ(found, 1);
  EXPECT_EQ(h.misses(), 1u);
  EXPECT_EQ(h.silence(), 5000ms);
  h.beat();  // it runs again
  now += kCheck;
  EXPECT_FALSE(h.check(false, now));
  EXPECT_EQ(h.silence(), 0ms);
  EXPECT_EQ(h.longest_silence(), 5000ms);
  // A second silence is a second miss; a shorter one leaves the longest.
  for (int i = 0; i < 15; ++i) (void)h.check(false, now += kCheck);
  EXPECT_EQ(h.misses(), 2u);
  EXPECT_EQ(h.longest_silence(), 5000ms);
}

TEST(Heartbeat, ASilenceJustUnderTheDeadlineIsNoMiss) {
  Heartbeat h;
  auto now = Heartbeat::Clock::time_point{} + 1h;
  for (int round = 0; round < 100; ++round) {
    h.beat();
    EXPECT_FALSE(h.check(false, now));
    for (int i = 0; i < 9; ++i) EXPECT_FALSE(h.check(false, now += kCheck));  // 900 ms
    now += kCheck;
  }
  EXPECT_EQ(h.misses(), 0u);
  EXPECT_EQ(h.longest_silence(), 900ms);
}

}  // namespace
