// Port security and MAC learning of one guest port (SourceGuard), against a
// learner that records the requests the control side would get.

#include "dataplane/source_guard.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "dataplane/guest_port.hpp"
#include "dataplane/switch_table.hpp"

namespace xdpvhost::dataplane {
namespace {

net::MacAddress mac(std::uint8_t last) {
  return net::MacAddress{{0x52, 0x54, 0, 0, 0, last}};
}

struct RecordingLearner : MacLearner {
  bool request(const net::MacAddress& m) noexcept override {
    asked.push_back(m);
    return accept_requests;
  }
  std::vector<net::MacAddress> asked;
  bool accept_requests = true;
};

const net::MacAddress kBroadcast{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}};
const net::MacAddress kMulticast{{0x01, 0x00, 0x5e, 0, 0, 1}};

// Ports "other", which owns mac(5) in the switch, and "self", which has no MAC.
struct OtherOwnsMac5 {
  OtherOwnsMac5() {
    table.add(SwitchEntry{&other, 9, 0, PortKind::kGuest, Port::kNoUplinkId, mac(5)});
    table.add(SwitchEntry{&self, 10, 0, PortKind::kGuest, Port::kNoUplinkId, std::nullopt});
    table.finish(1);
  }
  GuestPort other{9, "other", Port::kNoUplinkId, GuestPort::Options{}};
  GuestPort self{10, "self", Port::kNoUplinkId, GuestPort::Options{}};
  SwitchTable table;
};

constexpr Admission kAdmit = Admission::kAdmit;
constexpr Admission kHold = Admission::kHold;
constexpr Admission kRefuse = Admission::kRefuse;

TEST(SourceGuard, FixedAdmitsOnlyItsOwnUnicastMac) {
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kFixed, mac(1), true, &learner);
  EXPECT_EQ(g.admit(mac(1), nullptr, nullptr), kAdmit);
  EXPECT_EQ(g.admit(mac(2), nullptr, nullptr), kRefuse);
  EXPECT_EQ(g.admit(kBroadcast, nullptr, nullptr), kRefuse);
  EXPECT_EQ(g.admit(net::MacAddress{}, nullptr, nullptr), kRefuse);
  EXPECT_TRUE(learner.asked.empty()) << "a fixed port never asks";
}

// The target port of a same-node migration: fixed, with the MAC its VM's
// source port holds. It asks for that MAC only, holds its frames until the
// control side decides, and asks again after a refusal (the source's guest
// may leave later); once it holds the MAC it is an ordinary fixed port.
TEST(SourceGuard, AFixedPortWaitingForItsMacAsksForItAloneAndAgainAfterARefusal) {
  const OtherOwnsMac5 ports;
  const SwitchTable& table = ports.table;
  const GuestPort& self = ports.self;
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kFixed, mac(5), false, &learner);
  EXPECT_FALSE(g.mac().has_value());
  EXPECT_EQ(g.admit(mac(6), &table, &self), kRefuse) << "no other MAC, ever";
  EXPECT_TRUE(learner.asked.empty());
  EXPECT_EQ(g.admit(mac(5), &table, &self), kHold) << "its own, held by the source port";
  EXPECT_EQ(g.admit(mac(5), &table, &self), kHold);
  ASSERT_EQ(learner.asked.size(), 1u);
  g.refused(mac(5));
  EXPECT_EQ(g.admit(mac(5), &table, &self), kHold) << "asked again: it is its only MAC";
  EXPECT_EQ(learner.asked.size(), 2u);
  g.learned(mac(5));
  EXPECT_EQ(g.admit(mac(5), &table, &self), kAdmit);
  EXPECT_EQ(g.admit(mac(6), &table, &self), kRefuse);
  g.released();  // the migration went on to another port again
  EXPECT_EQ(g.admit(mac(6), &table, &self), kRefuse);
  EXPECT_EQ(g.admit(mac(5), &table, &self), kHold);
  EXPECT_EQ(learner.asked.size(), 3u);
}

TEST(SourceGuard, LearnHoldsTheFirstUnicastSourceUntilItIsDecidedAndLocksIt) {
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearn, std::nullopt, true, &learner);
  EXPECT_EQ(g.admit(kMulticast, nullptr, nullptr), kRefuse) << "a group address is never learned";
  EXPECT_EQ(g.admit(mac(7), nullptr, nullptr), kHold) << "nothing passes before the decision";
  EXPECT_TRUE(g.pending());
  EXPECT_EQ(g.admit(mac(7), nullptr, nullptr), kHold) << "the candidate waits while it is decided";
  EXPECT_EQ(g.admit(mac(8), nullptr, nullptr), kRefuse) << "one candidate at a time";
  ASSERT_EQ(learner.asked.size(), 1u) << "one request, however many frames";
  EXPECT_EQ(learner.asked[0], mac(7));
  g.learned(mac(7));
  EXPECT_EQ(g.mac(), mac(7));
  EXPECT_EQ(g.admit(mac(7), nullptr, nullptr), kAdmit);
  EXPECT_EQ(g.admit(mac(8), nullptr, nullptr), kRefuse) << "learn locks the MAC";
  EXPECT_EQ(learner.asked.size(), 1u);
}

TEST(SourceGuard, LearnMoveFollowsTheGuestOneMoveAtATime) {
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearnMove, mac(1), true, &learner);
  EXPECT_EQ(g.admit(mac(1), nullptr, nullptr), kAdmit);
  EXPECT_EQ(g.admit(mac(2), nullptr, nullptr), kHold);
  EXPECT_EQ(g.admit(mac(1), nullptr, nullptr), kAdmit)
      << "the old MAC stays until the move is done";
  g.learned(mac(2));
  EXPECT_EQ(g.admit(mac(2), nullptr, nullptr), kAdmit);
  EXPECT_EQ(g.admit(mac(3), nullptr, nullptr), kHold);
  EXPECT_EQ(learner.asked, (std::vector<net::MacAddress>{mac(2), mac(3)}));
}

TEST(SourceGuard, AMacAnotherPortOwnsIsNeverAskedForAndCountedOncePerAttempt) {
  const OtherOwnsMac5 ports;
  const SwitchTable& table = ports.table;
  const GuestPort& self = ports.self;
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearn, std::nullopt, true, &learner);
  EXPECT_EQ(g.admit(mac(5), &table, &self), Admission::kRefuseOwned)
      << "port other's MAC is not ours to take";
  EXPECT_EQ(g.admit(mac(5), &table, &self), kRefuse) << "its next frames: counted once";
  EXPECT_TRUE(learner.asked.empty());
  EXPECT_EQ(g.admit(mac(6), &table, &self), kHold);
}

TEST(SourceGuard, ALearnMovePortAsksForAHandOverAndHoldsUntilItIsDecided) {
  // Live migration on one node: the guest now sends from the port that
  // owned its MAC before. The control side decides (it grants the MAC only
  // when the owner's guest stopped); until then the frames wait.
  const OtherOwnsMac5 ports;
  const SwitchTable& table = ports.table;
  const GuestPort& self = ports.self;
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearnMove, std::nullopt, true, &learner);
  EXPECT_EQ(g.admit(mac(5), &table, &self), kHold) << "another port's until the hand-over";
  ASSERT_EQ(learner.asked.size(), 1u);
  EXPECT_TRUE(g.pending());
  EXPECT_EQ(g.admit(mac(5), &table, &self), kHold) << "still pending: not asked again";
  EXPECT_EQ(g.admit(mac(6), &table, &self), kRefuse) << "one request at a time";
  EXPECT_EQ(learner.asked.size(), 1u);
  g.learned(mac(5));
  EXPECT_EQ(g.admit(mac(5), &table, &self), kAdmit);
  // Refused: the MAC stays refused, nothing more is asked for it.
  SourceGuard h(MacPolicy::kLearnMove, std::nullopt, true, &learner);
  EXPECT_EQ(h.admit(mac(5), &table, &self), kHold);
  h.refused(mac(5));
  EXPECT_FALSE(h.pending());
  EXPECT_EQ(h.admit(mac(5), &table, &self), kRefuse);
  EXPECT_EQ(learner.asked.size(), 2u);
  // Released (its MAC moved to another port): the port has none, learns anew.
  g.released();
  EXPECT_FALSE(g.mac().has_value());
  EXPECT_EQ(g.admit(mac(7), &table, &self), kHold);
  EXPECT_EQ(learner.asked.size(), 3u);
}

TEST(SourceGuard, ARefusedMacStaysRefusedAndAFailedRequestIsAskedAgain) {
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearn, std::nullopt, true, &learner);
  EXPECT_EQ(g.admit(mac(3), nullptr, nullptr), kHold);
  g.refused(mac(3));
  EXPECT_FALSE(g.pending());
  EXPECT_EQ(g.admit(mac(3), nullptr, nullptr), kRefuse) << "no second request for a refused MAC";
  EXPECT_EQ(learner.asked.size(), 1u);
  learner.accept_requests = false;
  EXPECT_EQ(g.admit(mac(4), nullptr, nullptr), kRefuse) << "a request that could not be made";
  EXPECT_FALSE(g.pending());
  learner.accept_requests = true;
  EXPECT_EQ(g.admit(mac(4), nullptr, nullptr), kHold) << "is made with a later frame";
  EXPECT_EQ(learner.asked.size(), 3u);
}

TEST(SourceGuard, AGuestCyclingThroughMacsGetsItsBurstOfDecisionsThenItsRate) {
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearnMove, std::nullopt, true, &learner);
  // The default: 1 a second, 4 at once.
  std::uint8_t next = 1;
  for (int i = 0; i < 4; ++i, ++next) {
    EXPECT_EQ(g.admit(mac(next), nullptr, nullptr), kHold) << i;
    g.learned(mac(next));
  }
  EXPECT_EQ(g.admit(mac(next), nullptr, nullptr), Admission::kRefuseRateLimited);
  EXPECT_EQ(g.admit(mac(next + 1), nullptr, nullptr), Admission::kRefuseRateLimited);
  EXPECT_EQ(g.admit(mac(next - 1), nullptr, nullptr), kAdmit) << "its MAC still passes";
  EXPECT_EQ(learner.asked.size(), 4u) << "refused without asking";
  // A new rate refills the bucket; 0 is no limit.
  g.set_request_rate(LearnRequestRate{0, 1});
  for (int i = 0; i < 100; ++i, ++next) {
    ASSERT_EQ(g.admit(mac(next), nullptr, nullptr), kHold) << i;
    g.learned(mac(next));
  }
  EXPECT_EQ(learner.asked.size(), 104u);
  g.set_request_rate(LearnRequestRate{1000, 2});
  EXPECT_EQ(g.admit(mac(201), nullptr, nullptr), kHold);
  g.refused(mac(201));
  EXPECT_EQ(g.admit(mac(202), nullptr, nullptr), kHold) << "a refusal takes a token too";
  g.refused(mac(202));
  EXPECT_EQ(g.admit(mac(203), nullptr, nullptr), Admission::kRefuseRateLimited);
  EXPECT_EQ(g.admit(mac(202), nullptr, nullptr), kRefuse) << "a refused MAC costs nothing";
}

}  // namespace
}  // namespace xdpvhost::dataplane
