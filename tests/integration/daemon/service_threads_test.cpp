// Ports on different service threads: frames cross through the mailboxes
// and doorbells, in pure event mode and with busy polling.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon_test.hpp"
#include "frontend/frame_checksum.hpp"
#include "guest_traffic.hpp"

namespace xdpvhost::integration {
namespace {

const fe::MacAddress kMacA = fe::make_mac(1);
const fe::MacAddress kMacB = fe::make_mac(2);
const fe::MacAddress kMacC = fe::make_mac(3);

class ServiceThreads : public DaemonTest, public ::testing::WithParamInterface<int> {
 protected:
  void SetUp() override {
    DaemonTest::SetUp();
    start_daemon({port("a", 1, {{"thread", 0}}), port("b", 2, {{"thread", 1}}),
                  port("c", 3, {{"thread", 0}})},
                 {{"busy_poll_us", GetParam()}}, {{"threads", {{"count", 2}}}});
  }
};

TEST_P(ServiceThreads, FramesCrossBetweenThreadsIntactAndCounted) {
  EXPECT_EQ(port_get("a").at("thread"), 0);
  EXPECT_EQ(port_get("b").at("thread"), 1);
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  auto c = connect_receiving_guest("c");
  std::vector<Bytes> ab, ba;
  for (std::uint32_t i = 0; i < 600; ++i) {
    ab.push_back(numbered_frame(kMacB, kMacA, i, 18 + (i * 37) % 1455));
    ba.push_back(numbered_frame(kMacA, kMacB, 5000 + i, 18 + (i * 41) % 1455));
  }
  EXPECT_TRUE(stream(*a, *b, ab));
  EXPECT_TRUE(stream(*b, *a, ba));
  // A broadcast from thread 1 reaches both ports of thread 0.
  const std::vector<Bytes> flood{numbered_frame(fe::kBroadcastMac, kMacB, 1)};
  ASSERT_TRUE(send_frames(*b, flood));
  EXPECT_TRUE(same_frames(flood, receive(*a, 1)));
  EXPECT_TRUE(same_frames(flood, receive(*c, 1)));
  EXPECT_EQ(counter("a", "rx_packets"), ab.size());
  EXPECT_EQ(counter("b", "tx_packets"), ab.size());
  EXPECT_EQ(counter("b", "rx_packets"), ba.size() + 1);
  EXPECT_EQ(counter("a", "tx_packets"), ba.size() + 1);
}

TEST_P(ServiceThreads, PartialChecksumsSurviveTheMailbox) {
  fe::NegotiateOptions no_guest_csum;
  no_guest_csum.accept_features &= ~virtio::bit(virtio::Feature::kNetGuestCsum);
  auto a = connect_guest("a");
  auto b = connect_receiving_guest("b", no_guest_csum);
  ASSERT_TRUE(a);
  std::vector<Bytes> complete;
  for (std::uint32_t i = 0; i < 10; ++i) {
    Bytes f = numbered_frame(kMacB, kMacA, i, 100 + 50 * i);
    complete.push_back(f);
    auto h = fe::make_checksum_partial(f);
    ASSERT_TRUE(h);
    ASSERT_TRUE(send_frames(*a, {f}, 0, {}, h));
  }
  const auto got = receive(*b, complete.size());
  ASSERT_TRUE(same_frames(complete, got));
  for (const auto& f : got) EXPECT_TRUE(fe::verify_checksums(f.bytes).ok());
}

TEST_P(ServiceThreads, PingPongAcrossThreadsLosesNothing) {
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  constexpr int kExchanges = 1000;
  for (int i = 0; i < kExchanges; ++i) {
    const auto seq = static_cast<std::uint32_t>(i);
    const Bytes request = numbered_frame(kMacB, kMacA, seq, 64 + i % 300);
    ASSERT_TRUE(a->send_frame(request));
    auto at_b = b->receive_frames(10s, 1);
    ASSERT_EQ(at_b.size(), 1u) << "request " << i << " lost";
    ASSERT_EQ(at_b[0].bytes, request);
    const Bytes response = numbered_frame(kMacA, kMacB, 100000 + seq, 64 + i % 300);
    ASSERT_TRUE(b->send_frame(response));
    auto at_a = a->receive_frames(10s, 1);
    ASSERT_EQ(at_a.size(), 1u) << "response " << i << " lost";
    ASSERT_EQ(at_a[0].bytes, response);
    a->reclaim_tx();
    b->reclaim_tx();
  }
  const auto threads = rpc().call("stats.get").at("threads");
  ASSERT_EQ(threads.size(), 2u);
  if (GetParam() == 0) {
    for (const auto& t : threads) EXPECT_GT(t.at("sleeps").get<std::uint64_t>(), 0u) << t.dump();
  }
}

TEST_P(ServiceThreads, AMovedPortRunsOnItsNewThreadAndItsRingsFollowIt) {
  // queue.move between exchanges, 40 times; then a new frontend session:
  // its rings start on the thread that runs the port now.
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  const auto move_b = [&](int to) {
    return rpc().call("queue.move", {{"port", "b"}, {"pair", 0}, {"thread", to}});
  };
  for (std::uint32_t round = 0; round < 40; ++round) {
    const int to = static_cast<int>(round % 2);  // b starts on thread 1
    const auto moved = move_b(to);
    EXPECT_EQ(moved.at("outcome"), "moved") << moved.dump();
    EXPECT_EQ(moved.at("from"), 1 - to);
    EXPECT_EQ(moved.at("pairs"), nlohmann::json::array({0}));
    EXPECT_EQ(port_get("b").at("thread"), to);
    ASSERT_TRUE(exchange(*a, kMacA, *b, kMacB, 20, round * 1000)) << "round " << round;
  }
  EXPECT_EQ(move_b(1).at("outcome"), "already_there");
  EXPECT_EQ(move_b(0).at("outcome"), "moved");
  b.reset();
  EXPECT_TRUE(wait_until([&] { return port_state("b") == "waiting"; })) << port_get("b").dump();
  b = connect_receiving_guest("b");
  ASSERT_TRUE(b);
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 20, 90000));
  EXPECT_EQ(port_get("b").at("thread"), 0);
  for (const auto& t : rpc().call("stats.get").at("threads"))
    EXPECT_EQ(t.at("dropped_port_gone"), 0) << t.dump();
}

INSTANTIATE_TEST_SUITE_P(Daemon, ServiceThreads, ::testing::Values(0, 50), [](const auto& info) {
  return "BusyPoll" + std::to_string(info.param) + "us";
});

}  // namespace
}  // namespace xdpvhost::integration
