// A guest with several queue pairs: frames from the switch are spread over
// its enabled receive queues by flow, also when its pairs live in several
// queue groups (one GuestPort per service thread); a pair the guest disables
// takes nothing from then on; per-pair counters count each pair.

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <set>
#include <vector>

#include "dataplane/flow_hash.hpp"
#include "dataplane/forwarder.hpp"
#include "dataplane/guest_port.hpp"
#include "net_test_guest.hpp"

namespace xdpvhost::dataplane {
namespace {

using test::NetTestGuest;

const std::uint8_t kMacA[6] = {0x52, 0x54, 0, 0, 0, 0xa};
const std::uint8_t kMacM[6] = {0x52, 0x54, 0, 0, 0, 0x4d};
const std::uint8_t kBroadcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr std::uint32_t kPairs = 4;
constexpr std::uint32_t kSenderId = 1, kFirstGroupId = 2;

GuestPort::Options options(const std::uint8_t mac[6]) {
  return GuestPort::Options{1500, {}, MacPolicy::kFixed, net::MacAddress::from(mac)};
}

// UDP from A to M, flow `n` (source port 20000 + n).
std::vector<std::uint8_t> flow_frame(unsigned n) {
  auto f = test::udp_frame(kMacM, kMacA, 40);
  const auto port = static_cast<std::uint16_t>(20000 + n);
  f[34] = static_cast<std::uint8_t>(port >> 8);
  f[35] = static_cast<std::uint8_t>(port);
  return f;
}

struct MultiQueueTest : ::testing::Test {
  // The multi-queue guest M with kPairs pairs in `groups` queue groups
  // (pair p in group p % groups, as the port's controller places them), and
  // a one-pair sender A.
  void build(std::uint32_t groups, int rx_buffers = 256) {
    sender_guest = std::make_unique<NetTestGuest>();
    sender = std::make_unique<GuestPort>(kSenderId, "a", Port::kNoUplinkId, options(kMacA));
    sender->start_queue(sender_guest->start(0));
    sender->start_queue(sender_guest->start(1));
    for (std::uint32_t g = 0; g < groups; ++g) {
      group.push_back(
          std::make_unique<GuestPort>(kFirstGroupId + g, "m", Port::kNoUplinkId, options(kMacM)));
      group.back()->set_group(kFirstGroupId);
    }
    for (std::uint32_t p = 0; p < kPairs; ++p) {
      pair.push_back(std::make_unique<NetTestGuest>());
      if (rx_buffers > 0) pair.back()->post_rx(rx_buffers);
      GuestPort& owner = *group[p % groups];
      owner.start_queue(pair.back()->start(2 * p));
      owner.start_queue(pair.back()->start(2 * p + 1));
    }
    std::vector<std::uint32_t> rx_groups;
    for (std::uint32_t g = 0; g < groups && groups > 1; ++g) rx_groups.push_back(kFirstGroupId + g);
    publish(rx_groups);
  }
  // The switch table, the multi-queue guest receiving on `rx_groups`.
  void publish(const std::vector<std::uint32_t>& rx_groups) {
    auto table = std::make_shared<SwitchTable>();
    table->add(SwitchEntry{sender.get(), kSenderId, 0, PortKind::kGuest, Port::kNoUplinkId,
                           net::MacAddress::from(kMacA)});
    for (std::size_t g = 0; g < group.size(); ++g) {
      SwitchEntry e{group[g].get(),   group[g]->id(),    0,
                    PortKind::kGuest, Port::kNoUplinkId, net::MacAddress::from(kMacM)};
      e.secondary = g > 0;
      if (g == 0) e.rx_groups = rx_groups;
      table->add(e);
    }
    table->finish(1);
    forwarder.set_table(table);
  }
  void round() {
    sender->poll(forwarder);
    for (auto& g : group) g->poll(forwarder);
    sender->end_burst();
    for (auto& g : group) g->end_burst();
  }
  // Sends flows [first, first + n) from A, one frame each; returns frames
  // received per pair.
  std::array<std::size_t, kPairs> send_flows(unsigned first, unsigned n) {
    for (unsigned i = first; i < first + n; ++i) {
      sender_guest->send(flow_frame(i));
      if ((i - first) % 32 == 31) round();
    }
    round();
    std::array<std::size_t, kPairs> got{};
    for (std::uint32_t p = 0; p < kPairs; ++p) got[p] = pair[p]->received().size();
    return got;
  }
  // Which pair flow `n` lands on (-1: none or several).
  int pair_of_flow(unsigned n) {
    sender_guest->send(flow_frame(n));
    round();
    int at = -1;
    for (std::uint32_t p = 0; p < kPairs; ++p) {
      const auto got = pair[p]->received().size();
      if (got == 1 && at == -1)
        at = static_cast<int>(p);
      else if (got != 0)
        return -1;
    }
    return at;
  }
  const GuestPort& owner_of_pair(std::uint32_t p) const { return *group[p % group.size()]; }

  Forwarder forwarder{0};
  std::unique_ptr<NetTestGuest> sender_guest;
  std::unique_ptr<GuestPort> sender;
  std::vector<std::unique_ptr<GuestPort>> group;
  std::vector<std::unique_ptr<NetTestGuest>> pair;
};

TEST_F(MultiQueueTest, FlowsSpreadOverEveryPairAndEachFlowStaysOnItsPair) {
  build(1);
  const auto got = send_flows(0, 128);
  std::size_t total = 0;
  for (std::uint32_t p = 0; p < kPairs; ++p) {
    EXPECT_GT(got[p], 128u / 8) << "pair " << p;
    EXPECT_EQ(owner_of_pair(p).pair_counters(p).tx_packets.get(), got[p]) << "pair " << p;
    total += got[p];
  }
  EXPECT_EQ(total, 128u);
  for (unsigned flow : {3u, 17u, 42u}) {
    const int first = pair_of_flow(flow);
    ASSERT_GE(first, 0);
    EXPECT_EQ(pair_of_flow(flow), first) << "flow " << flow;
    EXPECT_EQ(pair_of_flow(flow), first) << "flow " << flow;
  }
}

TEST_F(MultiQueueTest, ADisabledPairTakesNothingMoreAndTheOthersCarryOn) {
  build(1);
  // ethtool -L combined 1: QEMU disables pairs 1..3 (SET_VRING_ENABLE 0),
  // which stops their rings.
  for (std::uint32_t p = 1; p < kPairs; ++p) {
    group[0]->stop_queue(2 * p);
    group[0]->stop_queue(2 * p + 1);
  }
  const auto got = send_flows(0, 64);
  EXPECT_EQ(got[0], 64u);
  for (std::uint32_t p = 1; p < kPairs; ++p) EXPECT_EQ(got[p], 0u) << "pair " << p;
  EXPECT_EQ(group[0]->counters().drops[static_cast<std::size_t>(DropReason::kPortNotReady)].get(),
            0u);
  // Enabled again (combined 4): spread again.
  for (std::uint32_t p = 1; p < kPairs; ++p) {
    group[0]->start_queue(pair[p]->start(2 * p));
    group[0]->start_queue(pair[p]->start(2 * p + 1));
  }
  const auto again = send_flows(64, 128);
  for (std::uint32_t p = 0; p < kPairs; ++p) EXPECT_GT(again[p], 0u) << "pair " << p;
}

TEST_F(MultiQueueTest, FramesHeldForAQueueTheGuestDisablesGoToItsOtherQueues) {
  build(1, /*rx_buffers=*/0);
  send_flows(0, 16);  // no receive buffers anywhere: all 16 wait
  ASSERT_EQ(group[0]->held(), 16u);
  // The guest disables pair 3 and posts buffers on the others only.
  group[0]->stop_queue(6);
  group[0]->stop_queue(7);
  for (std::uint32_t p = 0; p < 3; ++p) pair[p]->post_rx(64);
  round();
  std::size_t got = 0;
  for (std::uint32_t p = 0; p < 3; ++p) got += pair[p]->received().size();
  EXPECT_EQ(got, 16u) << "held frames are delivered on the queues still enabled";
  EXPECT_TRUE(pair[3]->received().empty());
  EXPECT_EQ(group[0]->held(), 0u);
  EXPECT_EQ(group[0]->counters().drops[static_cast<std::size_t>(DropReason::kPortNotReady)].get(),
            0u);
}

TEST_F(MultiQueueTest, TransmitQueuesCountPerPair) {
  build(2);
  const std::uint8_t other[6] = {0x52, 0x54, 0, 0, 0, 0xa};
  sender_guest->post_rx(16);
  for (std::uint32_t p = 0; p < kPairs; ++p)
    for (std::uint32_t i = 0; i <= p; ++i) pair[p]->send(test::udp_frame(other, kMacM, 40));
  round();
  EXPECT_EQ(sender_guest->received().size(), 1u + 2u + 3u + 4u);
  for (std::uint32_t p = 0; p < kPairs; ++p) {
    EXPECT_EQ(owner_of_pair(p).pair_counters(p).rx_packets.get(), p + 1) << "pair " << p;
    EXPECT_EQ(group[(p + 1) % 2]->pair_counters(p).rx_packets.get(), 0u)
        << "the other group never polls pair " << p;
  }
}

TEST_F(MultiQueueTest, PairsInTwoGroupsShareTheFlowsAndEachFrameArrivesOnce) {
  build(2);
  const auto got = send_flows(0, 256);
  std::size_t total = 0;
  for (std::uint32_t p = 0; p < kPairs; ++p) {
    EXPECT_GT(got[p], 256u / 8) << "pair " << p;
    total += got[p];
  }
  EXPECT_EQ(total, 256u);
  EXPECT_EQ(group[0]->counters().tx_packets.get() + group[1]->counters().tx_packets.get(), 256u);
  const int flow = pair_of_flow(5);
  ASSERT_GE(flow, 0);
  EXPECT_EQ(pair_of_flow(5), flow);
}

// What a port that looks before it forwards (the uplink's GRO: is the flow's
// group a TSO guest on this thread?) sees is where the frame then goes: the
// flow's queue group, not the guest's first one.
TEST_F(MultiQueueTest, AFlowsRouteIsTheQueueGroupThatReceivesIt) {
  build(2);
  std::array<unsigned, 2> routed_to{};
  for (unsigned n = 0; n < 64; ++n) {
    const auto bytes = flow_frame(n);
    const Span span{bytes.data(), static_cast<std::uint32_t>(bytes.size())};
    const Frame frame(span);
    const Forwarder::Route route = forwarder.route(*sender, frame);
    ASSERT_FALSE(route.flood);
    ASSERT_NE(route.to, nullptr);
    const std::size_t g = route.to->port == group[0].get() ? 0 : 1;
    ASSERT_EQ(route.to->port, group[g].get());
    ++routed_to[g];
    const std::uint64_t before = group[g]->counters().tx_packets.get();
    sender_guest->send(bytes);
    round();
    EXPECT_EQ(group[g]->counters().tx_packets.get(), before + 1) << "flow " << n;
  }
  EXPECT_GT(routed_to[0], 0u);
  EXPECT_GT(routed_to[1], 0u) << "every flow routed to the first group";
}

TEST_F(MultiQueueTest, ABroadcastReachesAGuestOfSeveralGroupsOnce) {
  build(2);
  sender_guest->send(test::udp_frame(kBroadcast, kMacA, 40));
  round();
  std::size_t copies = 0;
  for (auto& p : pair) copies += p->received().size();
  EXPECT_EQ(copies, 1u);
}

TEST_F(MultiQueueTest, FromAnotherGroupToItsOwnMacIsAHairpinDrop) {
  build(2);
  pair[1]->send(test::udp_frame(kMacM, kMacM, 40));  // pair 1 is in group 1
  round();
  for (auto& p : pair) EXPECT_TRUE(p->received().empty());
  EXPECT_EQ(group[1]->counters().drops[static_cast<std::size_t>(DropReason::kHairpin)].get(), 1u);
}

TEST_F(MultiQueueTest, AGroupWithoutEnabledReceiveQueuesIsLeftOut) {
  build(2);
  // Pairs 1 and 3 (group 1) disabled: the controller tells the switch first,
  // then stops the rings.
  publish({kFirstGroupId});
  for (std::uint32_t p : {1u, 3u}) {
    group[1]->stop_queue(2 * p);
    group[1]->stop_queue(2 * p + 1);
  }
  const auto got = send_flows(0, 128);
  EXPECT_GT(got[0], 0u);
  EXPECT_GT(got[2], 0u);
  EXPECT_EQ(got[0] + got[2], 128u);
  EXPECT_EQ(got[1] + got[3], 0u);
  EXPECT_EQ(group[1]->counters().drops[static_cast<std::size_t>(DropReason::kPortNotReady)].get(),
            0u);
}

}  // namespace
}  // namespace xdpvhost::dataplane
