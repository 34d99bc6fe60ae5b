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
  // A learn-move port of VM `vm` (namespace "tenants").
  nlohmann::json vm_port(const std::string& name, const std::string& vm) {
    nlohmann::json p = learning_port(name, "learn-move");
    p["owner"] = {{"namespace", "tenants"}, {"vm", vm}};
    return p;
  }
  // A fixed port with MAC make_mac(mac_id) of VM `vm` (namespace "tenants"),
  // as the DRA plugin adds KubeVirt's ports.
  nlohmann::json fixed_vm_port(const std::string& name, const std::string& vm,
                               std::uint16_t mac_id) {
    nlohmann::json p = port(name, mac_id);
    p["mac_policy"] = "fixed";
    p["owner"] = {{"namespace", "tenants"}, {"vm", vm}};
    return p;
  }
  // The port.add error, or "" when the port was added.
  std::string add_error(const nlohmann::json& p) {
    try {
      rpc().call("port.add", p);
      return {};
    } catch (const RpcFailure& e) {
      return e.what();
    }
  }
  bool holds(const std::string& name, std::uint16_t mac_id) {
    const auto p = port_get(name);
    return p.value("mac_source", "") == "config" && p.value("mac", "") == mac_string(mac_id);
  }
  // A guest whose rings resume a running guest, as after an incoming
  // migration: one frame delivered (its RX ring moved on), then its rings
  // stopped and started again where they were. `from` floods that frame.
  std::unique_ptr<fe::Frontend> arriving_guest(const std::string& name, fe::Frontend& from,
                                               std::uint32_t seq) {
    auto g = connect_receiving_guest(name);
    EXPECT_TRUE(send_frames(from, {numbered_frame(fe::kBroadcastMac, fe::make_mac(2), seq)}));
    EXPECT_EQ(receive(*g, 1).size(), 1u);
    EXPECT_TRUE(g->stop());
    EXPECT_TRUE(g->start()) << g->last_error();
    return g;
  }
  // A guest on port `name` that sent a frame from kMacA to `b`: its port
  // learned kMacA.
  std::unique_ptr<fe::Frontend> guest_that_learned_a(const std::string& name, fe::Frontend& b) {
    auto g = connect_receiving_guest(name);
    EXPECT_TRUE(stream(*g, b, {numbered_frame(kMacB, kMacA, 1)}));
    EXPECT_TRUE(wait_until([&] { return learned(name, 1); })) << port_get(name).dump();
    return g;
  }
  std::string refusal_detail(const std::string& name) {
    return port_get(name).value("mac_refusal", nlohmann::json::object()).value("detail", "");
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

// A guest reboots (its rings stop, without dirty logging, its frontend stays):
// neither another VM's port, even one whose rings resumed, nor a fresh port
// of the same VM takes its learn-move MAC; it keeps it and sends again.
TEST_F(MacLearning, ARebootHandsALearnMoveMacToNobody) {
  start_daemon({vm_port("a", "vm-a"), vm_port("n", "vm-n"), vm_port("m", "vm-a"), port("b", 2)});
  auto b = connect_receiving_guest("b");
  auto a = guest_that_learned_a("a", *b);
  auto n = arriving_guest("n", *b, 2);
  ASSERT_TRUE(a->stop());  // the reboot
  ASSERT_TRUE(send_frames(*n, {numbered_frame(kMacB, kMacA, 3)}));
  ASSERT_TRUE(wait_until([&] { return drops("n", "spoofed_source") >= 1; })) << stats("n").dump();
  EXPECT_NE(refusal_detail("n").find("one VM"), std::string::npos) << refusal_detail("n");
  auto m = connect_receiving_guest("m");
  ASSERT_TRUE(send_frames(*m, {numbered_frame(kMacB, kMacA, 4)}));
  ASSERT_TRUE(wait_until([&] { return drops("m", "spoofed_source") >= 1; })) << stats("m").dump();
  EXPECT_NE(refusal_detail("m").find("no migration arrived"), std::string::npos)
      << refusal_detail("m");
  EXPECT_TRUE(learned("a", 1)) << port_get("a").dump();
  EXPECT_TRUE(receive(*b, 1, 300ms).empty()) << "no frame from a taker got through";
  // The guest is back: its MAC is still its own.
  ASSERT_TRUE(a->reset_and_renegotiate()) << a->last_error();
  ASSERT_GT(post_rx(*a), 0u);
  EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacA, 5)}));
  EXPECT_TRUE(stream(*b, *a, {numbered_frame(kMacA, kMacB, 6)}));
}

// A same-node migration: the source's frontend goes, the destination's rings
// resume the guest on another port of the same VM, and the MAC moves there.
// The migration then fails (the destination goes, the source comes back):
// within the grace period the source gets the MAC back.
TEST_F(MacLearning, AMigrationHandsTheMacOverAndAFailedOneGivesItBack) {
  start_daemon({vm_port("a", "vm-a"), vm_port("t", "vm-a"), port("b", 2)});
  auto b = connect_receiving_guest("b");
  auto a = guest_that_learned_a("a", *b);
  auto t = arriving_guest("t", *b, 2);
  a.reset();  // the source's QEMU is gone
  ASSERT_TRUE(wait_until([&] { return port_state("a") == "waiting"; })) << port_get("a").dump();
  EXPECT_TRUE(stream(*t, *b, {numbered_frame(kMacB, kMacA, 3)}));
  ASSERT_TRUE(wait_until([&] { return learned("t", 1); })) << port_get("t").dump();
  EXPECT_FALSE(port_get("a").contains("mac"));
  EXPECT_TRUE(stream(*b, *t, {numbered_frame(kMacA, kMacB, 4)})) << "b reaches the guest on t";
  t.reset();  // the destination fails
  ASSERT_TRUE(wait_until([&] { return port_state("t") == "waiting"; }));
  a = connect_receiving_guest("a");  // the source resumes (fresh rings: no arrival needed)
  EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacA, 5)}));
  ASSERT_TRUE(wait_until([&] { return learned("a", 1); })) << port_get("a").dump();
  EXPECT_TRUE(stream(*b, *a, {numbered_frame(kMacA, kMacB, 6)}));
}

// Two ports may carry one fixed MAC only as a same-node migration's source
// and target: both fixed, of one VM. The second waits without the MAC.
TEST_F(MacLearning, AFixedMacIsSharedOnlyWithAPortOfTheSameVm) {
  start_daemon({fixed_vm_port("a", "vm-a", 1), port("b", 2)});
  EXPECT_NE(add_error(fixed_vm_port("x", "vm-x", 1)).find("already the MAC of port"),
            std::string::npos)
      << "another VM";
  EXPECT_NE(add_error(port("y", 1)).find("already the MAC of port"), std::string::npos)
      << "a port without an owner";
  nlohmann::json moving = fixed_vm_port("m", "vm-a", 1);
  moving["mac_policy"] = "learn-move";
  EXPECT_NE(add_error(moving).find("already the MAC of port"), std::string::npos)
      << "a port of the VM that is not fixed";
  ASSERT_EQ(add_error(fixed_vm_port("t", "vm-a", 1)), "");
  EXPECT_TRUE(holds("a", 1)) << port_get("a").dump();
  EXPECT_FALSE(port_get("t").contains("mac")) << port_get("t").dump();
  EXPECT_EQ(port_get("t").value("mac_source", ""), "none");
  // Its guest may not send from its MAC before a migration shows, nor from
  // any other; the holder's guest is untouched.
  auto b = connect_receiving_guest("b");
  auto a = connect_receiving_guest("a");
  auto t = connect_receiving_guest("t");
  ASSERT_TRUE(send_frames(*t, {numbered_frame(kMacB, kMacA, 1), numbered_frame(kMacB, kMacX, 2)}));
  ASSERT_TRUE(wait_until([&] { return drops("t", "spoofed_source") >= 2; })) << stats("t").dump();
  EXPECT_NE(refusal_detail("t").find("no migration arrived"), std::string::npos)
      << refusal_detail("t");
  EXPECT_TRUE(receive(*b, 1, 300ms).empty()) << "no frame from the waiting port got through";
  EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacA, 3)}));
  EXPECT_TRUE(stream(*b, *a, {numbered_frame(kMacA, kMacB, 4)}));
}

// KubeVirt's same-node migration with a fixed MAC: the target port waits,
// the source's frontend goes and the target's rings resume the guest, and
// the MAC moves there. The migration then fails: within the grace period
// the source gets it back.
TEST_F(MacLearning, AMigrationHandsAFixedMacOverAndAFailedOneGivesItBack) {
  start_daemon({fixed_vm_port("a", "vm-a", 1), port("b", 2)});
  ASSERT_EQ(add_error(fixed_vm_port("t", "vm-a", 1)), "");
  auto b = connect_receiving_guest("b");
  auto a = connect_receiving_guest("a");
  EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacA, 1)}));
  auto t = arriving_guest("t", *b, 2);
  a.reset();  // the source's QEMU is gone
  ASSERT_TRUE(wait_until([&] { return port_state("a") == "waiting"; })) << port_get("a").dump();
  EXPECT_TRUE(stream(*t, *b, {numbered_frame(kMacB, kMacA, 3)}));
  ASSERT_TRUE(wait_until([&] { return holds("t", 1); })) << port_get("t").dump();
  EXPECT_FALSE(port_get("a").contains("mac")) << port_get("a").dump();
  EXPECT_TRUE(stream(*b, *t, {numbered_frame(kMacA, kMacB, 4)})) << "b reaches the guest on t";
  ASSERT_TRUE(send_frames(*t, {numbered_frame(kMacB, kMacX, 5)}));
  ASSERT_TRUE(wait_until([&] { return drops("t", "spoofed_source") >= 1; })) << stats("t").dump();
  t.reset();  // the destination fails
  ASSERT_TRUE(wait_until([&] { return port_state("t") == "waiting"; }));
  a = connect_receiving_guest("a");  // the source resumes
  EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacA, 6)}));
  ASSERT_TRUE(wait_until([&] { return holds("a", 1); })) << port_get("a").dump();
  EXPECT_TRUE(stream(*b, *a, {numbered_frame(kMacA, kMacB, 7)}));
}

// The holder reboots (its rings stop, without dirty logging; its frontend
// stays): the waiting port of its VM, whose rings resumed, does not get the
// fixed MAC.
TEST_F(MacLearning, ARebootHandsAFixedMacToNobody) {
  start_daemon({fixed_vm_port("a", "vm-a", 1), port("b", 2)});
  ASSERT_EQ(add_error(fixed_vm_port("t", "vm-a", 1)), "");
  auto b = connect_receiving_guest("b");
  auto a = connect_receiving_guest("a");
  auto t = arriving_guest("t", *b, 2);
  ASSERT_TRUE(a->stop());  // the reboot
  ASSERT_TRUE(send_frames(*t, {numbered_frame(kMacB, kMacA, 3)}));
  ASSERT_TRUE(wait_until([&] { return drops("t", "spoofed_source") >= 1; })) << stats("t").dump();
  EXPECT_NE(refusal_detail("t").find("did not leave by migration"), std::string::npos)
      << refusal_detail("t");
  EXPECT_TRUE(holds("a", 1)) << port_get("a").dump();
  EXPECT_TRUE(receive(*b, 1, 300ms).empty()) << "no frame from the waiting port got through";
  ASSERT_TRUE(a->reset_and_renegotiate()) << a->last_error();
  ASSERT_GT(post_rx(*a), 0u);
  EXPECT_TRUE(stream(*a, *b, {numbered_frame(kMacB, kMacA, 4)}));
  EXPECT_TRUE(stream(*b, *a, {numbered_frame(kMacA, kMacB, 5)}));
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
