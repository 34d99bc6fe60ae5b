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

TEST(SourceGuard, FixedAdmitsOnlyItsOwnUnicastMac) {
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kFixed, mac(1), &learner);
  EXPECT_TRUE(g.admit(mac(1), nullptr, nullptr));
  EXPECT_FALSE(g.admit(mac(2), nullptr, nullptr));
  EXPECT_FALSE(g.admit(kBroadcast, nullptr, nullptr));
  EXPECT_FALSE(g.admit(net::MacAddress{}, nullptr, nullptr));
  EXPECT_TRUE(learner.asked.empty()) << "a fixed port never asks";
}

TEST(SourceGuard, LearnTakesTheFirstUnicastSourceAndLocksIt) {
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearn, std::nullopt, &learner);
  EXPECT_FALSE(g.admit(kMulticast, nullptr, nullptr)) << "a group address is never learned";
  EXPECT_TRUE(g.admit(mac(7), nullptr, nullptr));
  EXPECT_TRUE(g.pending());
  EXPECT_TRUE(g.admit(mac(7), nullptr, nullptr)) << "the candidate passes while it is decided";
  EXPECT_FALSE(g.admit(mac(8), nullptr, nullptr)) << "one candidate at a time";
  ASSERT_EQ(learner.asked.size(), 1u) << "one request, however many frames";
  EXPECT_EQ(learner.asked[0], mac(7));
  g.learned(mac(7));
  EXPECT_EQ(g.mac(), mac(7));
  EXPECT_TRUE(g.admit(mac(7), nullptr, nullptr));
  EXPECT_FALSE(g.admit(mac(8), nullptr, nullptr)) << "learn locks the MAC";
  EXPECT_EQ(learner.asked.size(), 1u);
}

TEST(SourceGuard, LearnMoveFollowsTheGuestOneMoveAtATime) {
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearnMove, mac(1), &learner);
  EXPECT_TRUE(g.admit(mac(1), nullptr, nullptr));
  EXPECT_TRUE(g.admit(mac(2), nullptr, nullptr));
  EXPECT_TRUE(g.admit(mac(1), nullptr, nullptr)) << "the old MAC stays until the move is done";
  g.learned(mac(2));
  EXPECT_TRUE(g.admit(mac(2), nullptr, nullptr));
  EXPECT_TRUE(g.admit(mac(3), nullptr, nullptr));
  EXPECT_EQ(learner.asked, (std::vector<net::MacAddress>{mac(2), mac(3)}));
}

TEST(SourceGuard, AMacAnotherPortOwnsIsNeverAskedFor) {
  GuestPort other(9, "other", Port::kNoUplinkId, GuestPort::Options{});
  GuestPort self(10, "self", Port::kNoUplinkId, GuestPort::Options{});
  SwitchTable table;
  table.add(SwitchEntry{&other, 9, 0, PortKind::kGuest, Port::kNoUplinkId, mac(5)});
  table.add(SwitchEntry{&self, 10, 0, PortKind::kGuest, Port::kNoUplinkId, std::nullopt});
  table.finish(1);
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearn, std::nullopt, &learner);
  EXPECT_FALSE(g.admit(mac(5), &table, &self)) << "port other's MAC is not ours to take";
  EXPECT_TRUE(learner.asked.empty());
  EXPECT_TRUE(g.admit(mac(6), &table, &self));
}

TEST(SourceGuard, ALearnMovePortAsksForAHandOverAndDropsUntilItIsGranted) {
  // Live migration on one node: the guest now sends from the port that
  // owned its MAC before. The control side decides (it grants the MAC only
  // when the owner's guest stopped); until then the frames are refused.
  GuestPort other(9, "other", Port::kNoUplinkId, GuestPort::Options{});
  GuestPort self(10, "self", Port::kNoUplinkId, GuestPort::Options{});
  SwitchTable table;
  table.add(SwitchEntry{&other, 9, 0, PortKind::kGuest, Port::kNoUplinkId, mac(5)});
  table.add(SwitchEntry{&self, 10, 0, PortKind::kGuest, Port::kNoUplinkId, std::nullopt});
  table.finish(1);
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearnMove, std::nullopt, &learner);
  EXPECT_FALSE(g.admit(mac(5), &table, &self)) << "another port's until the hand-over";
  ASSERT_EQ(learner.asked.size(), 1u);
  EXPECT_TRUE(g.pending());
  EXPECT_FALSE(g.admit(mac(5), &table, &self)) << "still pending: refused, not asked again";
  EXPECT_FALSE(g.admit(mac(6), &table, &self)) << "one request at a time";
  EXPECT_EQ(learner.asked.size(), 1u);
  g.learned(mac(5));
  EXPECT_TRUE(g.admit(mac(5), &table, &self));
  // Refused: the MAC stays refused, nothing more is asked for it.
  SourceGuard h(MacPolicy::kLearnMove, std::nullopt, &learner);
  EXPECT_FALSE(h.admit(mac(5), &table, &self));
  h.refused(mac(5));
  EXPECT_FALSE(h.pending());
  EXPECT_FALSE(h.admit(mac(5), &table, &self));
  EXPECT_EQ(learner.asked.size(), 2u);
  // Released (its MAC moved to another port): the port has none, learns anew.
  g.released();
  EXPECT_FALSE(g.mac().has_value());
  EXPECT_TRUE(g.admit(mac(7), &table, &self));
  EXPECT_EQ(learner.asked.size(), 3u);
}

TEST(SourceGuard, ARefusedMacStaysRefusedAndAFailedRequestIsAskedAgain) {
  RecordingLearner learner;
  SourceGuard g(MacPolicy::kLearn, std::nullopt, &learner);
  EXPECT_TRUE(g.admit(mac(3), nullptr, nullptr));
  g.refused(mac(3));
  EXPECT_FALSE(g.pending());
  EXPECT_FALSE(g.admit(mac(3), nullptr, nullptr)) << "no second request for a refused MAC";
  EXPECT_EQ(learner.asked.size(), 1u);
  learner.accept_requests = false;
  EXPECT_FALSE(g.admit(mac(4), nullptr, nullptr)) << "a request that could not be made";
  EXPECT_FALSE(g.pending());
  learner.accept_requests = true;
  EXPECT_TRUE(g.admit(mac(4), nullptr, nullptr)) << "is made with a later frame";
  EXPECT_EQ(learner.asked.size(), 3u);
}

}  // namespace
}  // namespace xdpvhost::dataplane
