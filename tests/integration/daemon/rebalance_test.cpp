// The rebalancer in a running xdpvhostd: with rebalance off two busy ports
// on one thread stay there; switched to auto over the control socket, the
// busy thread hands one of them to the idle thread within a few intervals,
// and every frame of the traffic between them arrives intact and in order
// across the move.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "daemon_test.hpp"
#include "guest_traffic.hpp"

namespace xdpvhost::integration {
namespace {

using namespace std::chrono_literals;

const fe::MacAddress kMacA = fe::make_mac(1);
const fe::MacAddress kMacC = fe::make_mac(3);

class Rebalance : public DaemonTest {};

TEST_F(Rebalance, TheBusyThreadHandsAQueueToTheIdleOneWhileFramesFlow) {
  // Threshold and margin 0: any load on thread 0 and any gain moves a queue
  // (the defaults, 90 % and 25 %, want more load than a test frontend makes).
  start_daemon(
      {port("a", 1, {{"thread", 0}}), port("c", 3, {{"thread", 0}}), port("b", 2, {{"thread", 1}})},
      {{"busy_poll_us", 0},
       {"rebalance", "off"},
       {"rebalance_interval_s", 1},
       {"rebalance_threshold_pct", 0},
       {"rebalance_margin_pct", 0}},
      {{"threads", {{"count", 2}}}});
  auto a = connect_receiving_guest("a");
  auto c = connect_receiving_guest("c");
  const auto thread_of = [&](const char* name) { return port_get(name).at("thread").get<int>(); };
  std::uint32_t round = 0;
  const auto traffic_for = [&](std::chrono::milliseconds span, auto until) {
    const auto end = std::chrono::steady_clock::now() + span;
    while (std::chrono::steady_clock::now() < end && !until()) {
      const auto exchanged = exchange(*a, kMacA, *c, kMacC, 100, ++round * 1000, 600);
      if (!exchanged) return exchanged;
    }
    return ::testing::AssertionSuccess();
  };

  ASSERT_TRUE(traffic_for(2500ms, [] { return false; }));
  EXPECT_EQ(thread_of("a"), 0) << "moved while rebalance was off";
  EXPECT_EQ(thread_of("c"), 0) << "moved while rebalance was off";
  const auto off = rpc().call("status").at("rebalance");
  EXPECT_EQ(off.at("mode"), "off");
  EXPECT_EQ(off.at("looks"), 0) << off.dump();
  EXPECT_TRUE(off.at("last_move").is_null());

  rpc().call("tunables.set", {{"rebalance", "auto"}});
  const auto moved = [&] { return thread_of("a") == 1 || thread_of("c") == 1; };
  ASSERT_TRUE(traffic_for(10s, moved));
  ASSERT_TRUE(moved()) << "nothing moved in 10 s\n" << daemon().log_tail();
  ASSERT_TRUE(traffic_for(1500ms, [] { return false; })) << "after the move";

  const std::string log = daemon().log();
  EXPECT_NE(log.find("moved from service thread 0 to 1"), std::string::npos) << log;
  EXPECT_NE(log.find("rebalance: port "), std::string::npos) << log;
  const auto status = rpc().call("status").at("rebalance");
  EXPECT_EQ(status.at("mode"), "auto");
  EXPECT_GE(status.at("looks").get<int>(), 1);
  EXPECT_EQ(status.at("thread_load_pct").size(), 2u);
  EXPECT_GE(status.at("moves").at("moved").get<int>(), 1) << status.dump();
  const auto& last = status.at("last_move");
  ASSERT_TRUE(last.is_object()) << status.dump();
  EXPECT_EQ(last.at("from"), 0);
  EXPECT_EQ(last.at("to"), 1);
  EXPECT_EQ(last.at("outcome"), "moved");
  EXPECT_EQ(last.at("queue").get<std::string>().rfind("port ", 0), 0u) << last.dump();
  for (const auto& t : rpc().call("stats.get").at("threads"))
    EXPECT_EQ(t.at("dropped_port_gone"), 0) << t.dump();
}

}  // namespace
}  // namespace xdpvhost::integration
