// A daemon killed with SIGKILL leaves its XDP program on the NIC (nothing
// detaches it). A new daemon must remove that stale copy, attach exactly one
// program and serve traffic again; the guest port in client mode reconnects
// to the frontend (the C++ frontend in server role, as QEMU/KubeVirt do).

#include <algorithm>

#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

class DaemonRestart : public UplinkTest {};

TEST_F(DaemonRestart, SigkillThenRestartRemovesTheStaleProgramAndTrafficResumes) {
  auto vm1 = std::make_unique<FrontendGuest>(socket_path("vm1"), parse_mac_text(kVm1.mac),
                                             parse_ipv4_text(kVm1.ip), testing::Role::kServer);
  vm1->listen();
  const json config =
      daemon_config(json::array({uplink_config()}), json::array({port_config(kVm1, "client")}));
  ASSERT_NO_FATAL_FAILURE(start_daemon(config));
  std::string error;
  ASSERT_TRUE(vm1->start(error)) << error;
  ASSERT_TRUE(wait_for([&] { return port_state("vm1") == "running"; }));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1, kVm1));

  daemon_->kill();
  const auto stale = lab_.node_xdp_programs();
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].name, "xdpvhost_steer")
      << "after SIGKILL the program stays: nothing detached it";

  ASSERT_NO_FATAL_FAILURE(start_daemon(config));
  const auto programs = lab_.node_xdp_programs();
  ASSERT_EQ(programs.size(), 1u) << "exactly one xdpvhost program after the restart";
  EXPECT_EQ(programs[0].name, "xdpvhost_steer");
  EXPECT_NE(programs[0].id, stale[0].id) << "the stale program is still the one attached";
  ASSERT_TRUE(wait_for([&] {
    return uplink_status().at("queues").at(0).value("bind_mode", "") == "copy";
  })) << uplink_status().dump();

  ASSERT_TRUE(vm1->reconnect(error)) << error;
  ASSERT_TRUE(wait_for([&] { return port_state("vm1") == "running"; })) << port_state("vm1");
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1, kVm1));
  const auto fdb = lab_.node_fdb_self_permanent();
  EXPECT_EQ(std::count(fdb.begin(), fdb.end(), std::string(kVm1.mac)), 1);

  ASSERT_NO_FATAL_FAILURE(stop_daemon());
  EXPECT_TRUE(lab_.node_xdp_programs().empty());
  EXPECT_FALSE(fdb_has(kVm1.mac));
}

}  // namespace
}  // namespace xdpvhost::uplink_test
