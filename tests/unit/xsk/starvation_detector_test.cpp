// The detector is pure bookkeeping over counters the kernel reports; these
// tests feed it counter sequences. The integration suite runs it against a
// real socket (tests/integration/xsk/busy_poll_test.cpp).
#include "xsk/starvation_detector.hpp"

#include <gtest/gtest.h>

namespace xdpvhost::xsk {
namespace {

StarvationConfig small_windows() {
  StarvationConfig c;
  c.window_rounds = 4;
  c.min_offered = 8;
  c.windows_to_trip = 2;
  return c;
}

// Runs one window of `rounds` poll rounds with `rx` frames in the first
// round, then evaluates `sample`.
StarvationVerdict window(StarvationDetector& d, std::uint32_t rx, const StarvationSample& sample) {
  bool ended = d.round(rx);
  for (int i = 1; i < 4; ++i) ended = d.round(0);
  EXPECT_TRUE(ended);
  return d.evaluate(sample);
}

TEST(StarvationDetector, WindowEndsAfterTheConfiguredRounds) {
  StarvationDetector d(small_windows());
  EXPECT_FALSE(d.round(0));
  EXPECT_FALSE(d.round(0));
  EXPECT_FALSE(d.round(0));
  EXPECT_TRUE(d.round(0));
}

TEST(StarvationDetector, TrafficFlowingIsHealthy) {
  StarvationDetector d(small_windows());
  StarvationSample s;
  window(d, 0, s);  // baseline
  for (int i = 0; i < 5; ++i) {
    s.offered += 100;
    const auto v = window(d, 100, s);
    EXPECT_FALSE(v.starving);
    EXPECT_EQ(v.cause, StarvationCause::kNone);
  }
}

TEST(StarvationDetector, NothingOfferedIsIdleNotStarving) {
  StarvationDetector d(small_windows());
  StarvationSample s;
  window(d, 0, s);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(window(d, 0, s).starving);
  EXPECT_EQ(d.starving_windows(), 0u);
}

TEST(StarvationDetector, OfferedButNotDeliveredTripsAfterTwoWindows) {
  StarvationDetector d(small_windows());
  StarvationSample s;
  window(d, 0, s);
  s.offered += 50;
  auto v = window(d, 0, s);
  EXPECT_EQ(v.cause, StarvationCause::kNoDelivery);
  EXPECT_FALSE(v.starving);
  s.offered += 50;
  v = window(d, 0, s);
  EXPECT_TRUE(v.starving);
  EXPECT_EQ(v.cause, StarvationCause::kNoDelivery);
  EXPECT_NE(v.reason.find("50 frames were offered"), std::string::npos) << v.reason;
}

TEST(StarvationDetector, OneGoodWindowResetsTheCount) {
  StarvationDetector d(small_windows());
  StarvationSample s;
  window(d, 0, s);
  s.offered += 50;
  EXPECT_FALSE(window(d, 0, s).starving);
  s.offered += 50;
  EXPECT_FALSE(window(d, 10, s).starving);  // some RX: healthy
  s.offered += 50;
  EXPECT_FALSE(window(d, 0, s).starving);  // first starving window again
  EXPECT_EQ(d.starving_windows(), 1u);
}

TEST(StarvationDetector, FewOfferedFramesAreNotEnough) {
  StarvationDetector d(small_windows());
  StarvationSample s;
  window(d, 0, s);
  for (int i = 0; i < 4; ++i) {
    s.offered += 7;  // below min_offered
    EXPECT_FALSE(window(d, 0, s).starving);
  }
}

TEST(StarvationDetector, EmptyFillRingIsNamedAsTheCause) {
  StarvationDetector d(small_windows());
  StarvationSample s;
  window(d, 0, s);
  for (int i = 0; i < 2; ++i) {
    s.offered += 20;
    s.xsk.rx_dropped += 20;
    s.xsk.rx_fill_ring_empty_descs += 20;
    const auto v = window(d, 0, s);
    EXPECT_EQ(v.cause, StarvationCause::kFillRingEmpty);
    EXPECT_EQ(v.starving, i == 1);
  }
}

TEST(StarvationDetector, DropsWithAnEmptyFillRingCountAsFillRingEmpty) {
  StarvationConfig c = small_windows();
  c.windows_to_trip = 1;
  StarvationDetector d(c);
  StarvationSample s;
  window(d, 0, s);
  s.xsk.rx_dropped += 5;
  s.fill_level = 0;
  EXPECT_EQ(window(d, 0, s).cause, StarvationCause::kFillRingEmpty);
}

TEST(StarvationDetector, FullRxRingIsNamedAsTheCause) {
  StarvationConfig c = small_windows();
  c.windows_to_trip = 1;
  StarvationDetector d(c);
  StarvationSample s;
  s.fill_level = 100;
  window(d, 0, s);
  s.xsk.rx_ring_full += 3;
  const auto v = window(d, 0, s);
  EXPECT_TRUE(v.starving);
  EXPECT_EQ(v.cause, StarvationCause::kRxRingFull);
}

TEST(StarvationDetector, CountersGoingBackwardsRebaseline) {
  StarvationConfig c = small_windows();
  c.windows_to_trip = 1;
  StarvationDetector d(c);
  StarvationSample s;
  s.offered = 1000;
  window(d, 0, s);
  s.offered = 10;  // a new socket / program: counters restarted
  EXPECT_FALSE(window(d, 0, s).starving);
}

TEST(StarvationDetector, ResetForgetsHistory) {
  StarvationDetector d(small_windows());
  StarvationSample s;
  window(d, 0, s);
  s.offered += 50;
  window(d, 0, s);
  EXPECT_EQ(d.starving_windows(), 1u);
  d.reset();
  EXPECT_EQ(d.starving_windows(), 0u);
  s.offered += 50;
  EXPECT_FALSE(window(d, 0, s).starving);  // baseline again
}

}  // namespace
}  // namespace xdpvhost::xsk
