// MAC learning and port security through the real daemon: ports without a
// configured MAC (mac_policy learn, learn-move) learn it from their guest's
// frames, the switch and port.get follow, and a guest that sends from a
// source it may not use has those frames dropped as spoofed_source.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "daemon_test.hpp"
#include "guest_traffic.hpp"

namespace xdpvhost::integration {
namespace {

const fe::MacAddress kMacA = fe::make_mac(1);
const fe::MacAddress kMacB = fe::make_mac(2);
const fe::MacAddress kMacX = fe::make_mac(0x77);

class MacLearning : public DaemonTest {
 protected:
  // A port without a MAC.
  nlohmann::json learning_port(const std::string& name, const std::string& policy) {
    nlohmann::json p = port(name, 0);
    p.erase("mac");
    p["mac_policy"] = policy;
    return p;
  }
  bool learned(const std::string& name, std::uint16_t mac_id) {
    const auto p = port_get(name);
    return p.value("mac_source", "") == "learned" && p.value("mac", "") == mac_string(mac_id);
  }
};

TEST_F(MacLearning, PortsWithoutAMacLearnItAndGuestsReachEachOther) {
  start_daemon({learning_port("a", "learn"), learning_port("b", "learn")});
  EXPECT_EQ(port_get("a").value("mac_source", ""), "none");
  EXPECT_FALSE(port_get("a").contains("mac"));
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  // b announces itself (a broadcast from its MAC), then a sends to it.
  ASSERT_TRUE(send_frames(*b, {numbered_frame(fe::kBroadcastMac, kMacB, 1)}));
  ASSERT_EQ(receive(*a, 1).size(), 1u) << "a broadcast is flooded while b's MAC is learned";
  ASSERT_TRUE(wait_until([&] { return learned("b", 2); })) << port_get("b").dump();
  const std::vector<Bytes> ab{numbered_frame(kMacB, kMacA, 2), numbered_frame(kMacB, kMacA, 3)};
  EXPECT_TRUE(stream(*a, *b, ab));
  ASSERT_TRUE(wait_until([&] { return learned("a", 1); }));
  EXPECT_TRUE(stream(*b, *a, {numbered_frame(kMacA, kMacB, 4)}));
  EXPECT_EQ(counter("a", "mac_learned"), 1u);
  EXPECT_EQ(counter("b", "mac_learned"), 1u);
}

TEST_F(MacLearning, ALearnedMacIsLockedAndAForgedSourceIsDroppedAsSpoofed) {
  start_daemon({learning_port("a", "learn"), port("b", 2)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacA, 1)}));
  ASSERT_TRUE(wait_until([&] { return learned("a", 1); }));
  // a now forges another source: dropped, counted, never delivered.
  ASSERT_TRUE(send_frames(*a, {numbered_frame(kMacB, kMacX, 2), numbered_frame(kMacB, kMacX, 3)}));
  ASSERT_TRUE(wait_until([&] { return drops("a", "spoofed_source") == 2; })) << stats("a").dump();
  EXPECT_TRUE(learned("a", 1)) << "learn keeps the first MAC";
  // The fixed port b may not send from a's MAC (or any other) either.
  ASSERT_TRUE(send_frames(*b, {numbered_frame(kMacA, kMacA, 4)}));
  ASSERT_TRUE(wait_until([&] { return drops("b", "spoofed_source") == 1; }));
  EXPECT_TRUE(receive(*a, 1, 300ms).empty()) << "no spoofed frame got through";
}

TEST_F(MacLearning, LearnMoveFollowsTheGuestButNeverTakesAnotherPortsMac) {
  start_daemon({learning_port("a", "learn-move"), port("b", 2)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacA, 1)}));
  ASSERT_TRUE(wait_until([&] { return learned("a", 1); }));
  EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacX, 2)}));
  ASSERT_TRUE(wait_until([&] { return learned("a", 0x77); })) << port_get("a").dump();
  EXPECT_TRUE(stream(*b, *a, {numbered_frame(kMacX, kMacB, 3)})) << "b reaches a at its new MAC";
  // a tries to take b's MAC: refused, its frames dropped.
  ASSERT_TRUE(send_frames(*a, {numbered_frame(kMacB, kMacB, 4)}));
  ASSERT_TRUE(wait_until([&] { return drops("a", "spoofed_source") >= 1; }));
  EXPECT_TRUE(learned("a", 0x77));
  EXPECT_EQ(port_get("b").value("mac", ""), mac_string(2));
}

// The hand-over of a same-node migration is between learn-move ports; a MAC
// that a `learn` port locked stays its own while its guest is stopped (a
// reboot), whatever another guest sends.
TEST_F(MacLearning, AStoppedLearnPortKeepsItsMacFromALearnMovePort) {
  start_daemon({learning_port("a", "learn"), learning_port("m", "learn-move"), port("b", 2)});
  auto b = connect_receiving_guest("b");
  {
    auto a = connect_receiving_guest("a");
    EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacA, 1)}));
    ASSERT_TRUE(wait_until([&] { return learned("a", 1); }));
  }  // a's frontend goes away: its guest is stopped
  ASSERT_TRUE(wait_until([&] { return port_get("a").value("state", "") != "connected"; }))
      << port_get("a").dump();
  auto m = connect_receiving_guest("m");
  ASSERT_TRUE(send_frames(*m, {numbered_frame(kMacB, kMacA, 2)}));
  ASSERT_TRUE(wait_until([&] { return drops("m", "spoofed_source") >= 1; })) << stats("m").dump();
  EXPECT_TRUE(learned("a", 1)) << port_get("a").dump();
  EXPECT_NE(port_get("m").value("mac", ""), mac_string(1));
}

TEST_F(MacLearning, AFixedPortNeedsAMac) {
  start_daemon({port("b", 2)});
  nlohmann::json p = port("c", 3);
  p.erase("mac");
  p["mac_policy"] = "fixed";
  try {
    rpc().call("port.add", p);
    FAIL() << "a fixed port without a MAC was added";
  } catch (const RpcFailure& e) {
    EXPECT_NE(std::string(e.what()).find("needed with mac_policy fixed"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace xdpvhost::integration
