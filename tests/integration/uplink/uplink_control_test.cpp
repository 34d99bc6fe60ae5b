// uplink.add / uplink.remove at run time, and the unicast filter following
// the guest ports: `bridge fdb show dev IF` lists each guest MAC that uses
// the uplink as "self permanent" while its port exists, and nothing of ours
// is left (entries, promiscuity, XDP program) after the daemon exits.

#include <signal.h>

#include <fstream>

#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;

constexpr int kInUse = -32008;

class UplinkControl : public UplinkTest {};

TEST_F(UplinkControl, AddedAndRemovedAtRunTime) {
  ASSERT_NO_FATAL_FAILURE(start_daemon(daemon_config(json::array(), json::array())));
  EXPECT_TRUE(lab_.node_xdp_programs().empty());

  const json added = call("uplink.add", uplink_config());
  ASSERT_FALSE(added.is_null());
  EXPECT_EQ(added.value("link", ""), "up") << added.dump();
  EXPECT_NE(added.value("xdp_program", ""), "") << added.dump();
  const auto programs = lab_.node_xdp_programs();
  ASSERT_EQ(programs.size(), 1u);
  EXPECT_EQ(programs[0].name, "xdpvhost_steer");
  ASSERT_TRUE(wait_for([&] {
    return uplink_status().at("queues").at(0).value("bind_mode", "") == "copy";
  })) << uplink_status().dump();

  ASSERT_FALSE(call("port.add", port_config(kVm1)).is_null());
  EXPECT_TRUE(fdb_has(kVm1.mac));
  std::unique_ptr<FrontendGuest> vm1;
  ASSERT_NO_FATAL_FAILURE(connect_guest(vm1, kVm1));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1, kVm1));

  // Refused while a port names it.
  const RpcReply refused = request("uplink.remove", {{"name", "up0"}});
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.error_code(), kInUse) << refused.error_message();
  EXPECT_NE(refused.error_message().find("vm1"), std::string::npos) << refused.error_message();
  EXPECT_EQ(lab_.node_xdp_programs().size(), 1u);
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1, kVm1));

  vm1.reset();
  ASSERT_FALSE(call("port.remove", {{"name", "vm1"}}).is_null());
  EXPECT_FALSE(fdb_has(kVm1.mac));
  const json removed = call("uplink.remove", {{"name", "up0"}});
  EXPECT_EQ(removed, json({{"removed", "up0"}}));
  EXPECT_TRUE(call("uplink.list").empty());
  EXPECT_TRUE(lab_.node_xdp_programs().empty()) << "the XDP program stayed after uplink.remove";
  EXPECT_EQ(lab_.node_promiscuity(), 0);

  // And once more: the interface is free for a new uplink.
  const json again = call("uplink.add", uplink_config());
  EXPECT_EQ(again.value("link", ""), "up") << again.dump();
  EXPECT_EQ(lab_.node_xdp_programs().size(), 1u);
  EXPECT_FALSE(call("uplink.remove", {{"name", "up0"}}).is_null());
  EXPECT_TRUE(lab_.node_xdp_programs().empty());
}

// A reload whose file no longer has the uplink keeps it while a port added
// at run time (a VM attached through its DRA claim) uses it: the port and
// its traffic stay, and the reload says why the uplink did.
TEST_F(UplinkControl, AReloadKeepsAnUplinkThatRunTimePortsUse) {
  ASSERT_NO_FATAL_FAILURE(
      start_daemon(daemon_config(json::array({uplink_config()}), json::array(),
                                 json{{"state_file", workdir_ + "/state.json"}})));
  ASSERT_FALSE(call("port.add", port_config(kVm1)).is_null());
  std::unique_ptr<FrontendGuest> vm1;
  ASSERT_NO_FATAL_FAILURE(connect_guest(vm1, kVm1));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1, kVm1));

  // The file as the daemon read it (start_daemon adds the control socket),
  // without the uplink.
  const auto path = daemon_->dir() / "config.json";
  json file;
  std::ifstream(path) >> file;
  file["uplinks"] = json::array();
  std::ofstream(path) << file.dump(2);
  ASSERT_EQ(::kill(daemon_->pid(), SIGHUP), 0);
  ASSERT_TRUE(wait_for([&] {
    return daemon_->log().find("uplink(s), 1 port(s)") != std::string::npos;
  })) << daemon_->log_tail();
  EXPECT_NE(daemon_->log().find("uplink up0 not removed: ports added at run time use it (vm1)"),
            std::string::npos)
      << daemon_->log_tail();
  const json ports = call("port.list");
  ASSERT_EQ(ports.size(), 1u) << ports.dump();
  EXPECT_EQ(ports[0].value("name", ""), "vm1");
  EXPECT_EQ(call("uplink.list").size(), 1u);
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1, kVm1));

  // Kept as a run-time uplink: a restart brings both back from the state file.
  vm1.reset();
  ASSERT_NO_FATAL_FAILURE(stop_daemon());
  ASSERT_NO_FATAL_FAILURE(start_daemon(file));
  EXPECT_EQ(call("port.list").size(), 1u) << daemon_->log_tail();
  EXPECT_EQ(call("uplink.list").size(), 1u) << daemon_->log_tail();
  ASSERT_NO_FATAL_FAILURE(connect_guest(vm1, kVm1));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1, kVm1));
  // Once its ports are gone, it goes like any run-time uplink.
  vm1.reset();
  ASSERT_FALSE(call("port.remove", {{"name", "vm1"}}).is_null());
  EXPECT_EQ(call("uplink.remove", {{"name", "up0"}}), json({{"removed", "up0"}}));
  EXPECT_TRUE(lab_.node_xdp_programs().empty());
}

TEST_F(UplinkControl, UnicastFilterFollowsThePorts) {
  constexpr GuestAddress kVm3{"vm3", "52:54:00:00:20:03", "10.99.0.13"};
  constexpr GuestAddress kLocal{"local", "52:54:00:00:20:04", "10.99.0.14"};
  ASSERT_NO_FATAL_FAILURE(start_daemon(daemon_config(
      json::array({uplink_config()}), json::array({port_config(kVm1), port_config(kVm2)}))));
  EXPECT_TRUE(fdb_has(kVm1.mac));
  EXPECT_TRUE(fdb_has(kVm2.mac));
  EXPECT_EQ(uplink_status().value("unicast_filter", ""), "unicast list");
  // veth has no IFF_UNICAST_FLT: the kernel makes it promiscuous for the list.
  EXPECT_EQ(lab_.node_promiscuity(), 1);

  // Frames for vm2 are steered to the daemon while the port exists, and go
  // to the node's kernel (XDP_PASS) once it is removed.
  std::unique_ptr<PacketSocket> peer, node;
  {
    NetnsScope in(lab_.peer_fd());
    peer = std::make_unique<PacketSocket>(UplinkLab::kPeerIf, 0x88b5);
  }
  {
    NetnsScope in(lab_.node_fd());
    node = std::make_unique<PacketSocket>(UplinkLab::kNodeIf, 0x88b5);
  }
  const auto to_vm2 =
      testing::build_ethernet(parse_mac_text(kVm2.mac), parse_mac_text(UplinkLab::kPeerMac), 0x88b5,
                              std::vector<std::uint8_t>(100, 1));
  const std::uint64_t rx0 = uplink_stats().at("rx_packets").get<std::uint64_t>();
  ASSERT_TRUE(peer->send(to_vm2));
  EXPECT_TRUE(wait_for(
      [&] { return uplink_stats().at("rx_packets").get<std::uint64_t>() == rx0 + 1; }, 3s));
  EXPECT_TRUE(node->receive(1, 200).empty()) << "redirected frames must not reach the node's stack";

  ASSERT_FALSE(call("port.remove", {{"name", "vm2"}}).is_null());
  EXPECT_TRUE(fdb_has(kVm1.mac));
  EXPECT_FALSE(fdb_has(kVm2.mac)) << "port.remove left the guest's unicast filter entry";
  ASSERT_TRUE(peer->send(to_vm2));
  EXPECT_EQ(node->receive(1, 1000).size(), 1u)
      << "after port.remove the MAC is still steered away from the node";
  EXPECT_EQ(uplink_stats().at("rx_packets").get<std::uint64_t>(), rx0 + 1);

  ASSERT_FALSE(call("port.add", port_config(kVm3)).is_null());
  EXPECT_TRUE(fdb_has(kVm3.mac));
  json local = port_config(kLocal);
  local.erase("uplink");
  ASSERT_FALSE(call("port.add", local).is_null());
  EXPECT_FALSE(fdb_has(kLocal.mac)) << "a port without the uplink got a filter entry on it";

  ASSERT_NO_FATAL_FAILURE(stop_daemon());
  EXPECT_FALSE(fdb_has(kVm1.mac)) << "left on the NIC at exit";
  EXPECT_FALSE(fdb_has(kVm3.mac)) << "left on the NIC at exit";
  EXPECT_EQ(lab_.node_promiscuity(), 0);
  EXPECT_TRUE(lab_.node_xdp_programs().empty()) << "the XDP program stayed after exit";
}

}  // namespace
}  // namespace xdpvhost::uplink_test
