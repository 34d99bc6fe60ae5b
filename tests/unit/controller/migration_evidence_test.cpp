// What a port's frontend shows of a live migration: rings that resume a
// running guest on arrival, rings stopped under dirty logging on departure;
// a reboot, a driver reload and a ring handed over again show neither.

#include "controller/migration_evidence.hpp"

#include <gtest/gtest.h>

namespace xdpvhost::controller {
namespace {

TEST(MigrationEvidence, ABootedGuestStartsEveryRingAtZero) {
  MigrationEvidence e(4);
  for (std::uint32_t v = 0; v < 4; ++v) e.ring_started(v, 0);
  EXPECT_FALSE(e.arrived());
  EXPECT_FALSE(e.left_logging());
}

TEST(MigrationEvidence, RingsThatResumeARunningGuestAreAnArrival) {
  MigrationEvidence e(2);
  e.ring_started(0, 0);  // an RX ring that never delivered
  e.ring_started(1, 317);
  EXPECT_TRUE(e.arrived());
  // A reboot: every ring stops without logging, and starts at 0 again.
  e.ring_stopped(false);
  e.ring_stopped(false);
  EXPECT_FALSE(e.arrived()) << "no ring runs";
  EXPECT_FALSE(e.left_logging());
  e.ring_started(0, 0);
  e.ring_started(1, 0);
  EXPECT_FALSE(e.arrived()) << "a new session forgets the last one";
}

TEST(MigrationEvidence, ARingHandedOverAgainIsNotANewStart) {
  MigrationEvidence e(2);
  e.ring_started(0, 0);
  e.ring_started(1, 0);
  // LOG_ALL acked: the running rings are stopped and started again where
  // they were, one at a time.
  e.ring_stopped(false);
  e.ring_started(0, 90);
  e.ring_stopped(false);
  e.ring_started(1, 120);
  EXPECT_FALSE(e.arrived());
}

TEST(MigrationEvidence, TheLastStopUnderDirtyLoggingIsADeparture) {
  MigrationEvidence e(2);
  e.ring_started(0, 0);
  e.ring_started(1, 0);
  e.ring_stopped(true);
  EXPECT_FALSE(e.left_logging()) << "a ring still runs";
  e.ring_stopped(true);
  EXPECT_TRUE(e.left_logging());
  e.ring_started(0, 5);  // the source resumes (a failed migration)
  EXPECT_FALSE(e.left_logging());
}

TEST(MigrationEvidence, SendRarpCountsOnlyWhileTheRingsRun) {
  MigrationEvidence e(2);
  e.announced();
  e.ring_started(0, 0);
  EXPECT_FALSE(e.arrived());
  e.announced();
  EXPECT_TRUE(e.arrived());
}

TEST(MigrationEvidence, AStopWithoutAStartChangesNothing) {
  MigrationEvidence e(2);
  e.ring_stopped(true);
  EXPECT_FALSE(e.left_logging());
  EXPECT_FALSE(e.arrived());
}

}  // namespace
}  // namespace xdpvhost::controller
