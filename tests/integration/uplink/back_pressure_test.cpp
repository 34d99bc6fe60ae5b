// A bound on frames in flight (docs/techniques.md) at the uplink: a guest floods unicast to a MAC
// behind the uplink (testpmd txonly at full speed to the peer) with tx_inflight_max 16 (fewer than
// a burst: the ring fills within one round). The daemon must hold the guest back instead of
// dropping: no uplink_tx_full drops for unicast, every frame the guest handed over is sent, and the
// daemon keeps serving a second port on the guest's service thread meanwhile. The same whether the
// guest's thread owns the uplink queue or hands its frames over through a mailbox (two service
// threads, the uplink on thread 0): one rule for a full destination (lib/dataplane/README.md).

#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;

// The service thread of both guests; the uplink queue is on thread 0.
class BackPressure : public UplinkTest, public ::testing::WithParamInterface<int> {};

TEST_P(BackPressure, TxFloodIsHeldBackNotDroppedAndASecondPortIsServed) {
  const int guest_thread = GetParam();
  json uplink = uplink_config({{"tx_inflight_max", 16}});
  uplink["thread"] = 0;
  json pmd_port = port_config(kPmd), vm2_port = port_config(kVm2);
  pmd_port["thread"] = guest_thread;
  vm2_port["thread"] = guest_thread;
  ASSERT_NO_FATAL_FAILURE(start_daemon(daemon_config(
      json::array({uplink}), json::array({pmd_port, vm2_port}), {{"threads", {{"count", 2}}}})));
  ASSERT_EQ(call("port.get", {{"name", kPmd.name}}).at("thread"), guest_thread);
  EXPECT_EQ(call("tunables.get", {{"uplink", "up0"}}).at("tunables").value("tx_inflight_max", 0u),
            16u);
  std::unique_ptr<FrontendGuest> vm2;
  ASSERT_NO_FATAL_FAILURE(connect_guest(vm2, kVm2));
  ASSERT_NO_FATAL_FAILURE(peer_neighbour(kVm2));
  std::unique_ptr<UdpSocket> sink;  // bound, never read: the flood ends in its full buffer
  {
    NetnsScope in(lab_.peer_fd());
    sink = std::make_unique<UdpSocket>(7003);
  }
  const LinkCounters node0 = lab_.node_link();
  const json up0 = uplink_stats(), vm2_0 = port_stats(kVm2.name);

  std::unique_ptr<TestpmdGuest> pmd;
  ASSERT_NO_FATAL_FAILURE(
      start_testpmd(pmd, kPmd, "txonly",
                    {std::string("--eth-peer=0,") + UplinkLab::kPeerMac,
                     std::string("--tx-ip=") + kPmd.ip + "," + UplinkLab::kPeerIp,
                     "--tx-udp=9000,7003", "--txpkts=64"}));

  // While the flood runs: the second guest pings the peer and exchanges UDP,
  // and the control socket answers.
  const auto flood_until = std::chrono::steady_clock::now() + 2s;
  int replies = 0;
  for (std::uint16_t seq = 1; seq <= 20; ++seq) {
    ASSERT_TRUE(vm2->send(
        vm2->echo_request(kPeerMac, kPeerIp, 0x99, seq, testing::payload_pattern(56, seq))));
    if (vm2->pump_until(
            [&](const PacketView& v) {
              return v.icmp && v.icmp_type == 0 && v.icmp_id == 0x99 && v.icmp_seq == seq;
            },
            1, 5s))
      ++replies;
    EXPECT_FALSE(call("status").is_null());
  }
  EXPECT_EQ(replies, 20) << "the second port was starved by the flood";
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm2, kVm2, 50));
  const json during = uplink_stats();
  std::this_thread::sleep_until(flood_until);

  const TestpmdCounters c = pmd->stop_forwarding();
  ASSERT_TRUE(c.valid) << pmd->log();
  // testpmd's port is still up: the daemon takes what is left on its ring.
  wait_for([&] { return u(port_stats(kPmd.name), "rx_packets") >= c.tx; });
  const std::uint64_t vm2_done = u(port_stats(kVm2.name), "rx_packets") - u(vm2_0, "rx_packets");
  wait_for(
      [&] { return u(uplink_stats(), "tx_packets") - u(up0, "tx_packets") >= c.tx + vm2_done; });
  const json up1 = uplink_stats();
  const LinkCounters node1 = lab_.node_link();
  const json p1 = port_stats(kPmd.name), vm2_1 = port_stats(kVm2.name);
  const std::uint64_t vm2_sent = u(vm2_1, "rx_packets") - u(vm2_0, "rx_packets");
  const std::uint64_t uplink_sent = u(up1, "tx_packets") - u(up0, "tx_packets");
  std::cout << "flood: testpmd handed over " << c.tx
            << " (dropped in testpmd for a full ring: " << c.tx_dropped << "), uplink sent "
            << uplink_sent << ", veth sent " << node1.tx_packets - node0.tx_packets
            << ", veth dropped " << node1.tx_dropped - node0.tx_dropped << "\n";

  EXPECT_GT(c.tx, 10000u) << "not much of a flood";
  EXPECT_GT(c.tx_dropped, 0u)
      << "testpmd never found its ring full: the daemon did not hold it back";
  EXPECT_EQ(u(up1.at("drops"), "uplink_tx_full"), 0u)
      << "unicast dropped instead of held back: " << up1.dump();
  EXPECT_EQ(u(during.at("drops"), "uplink_tx_full"), 0u);
  EXPECT_EQ(total(up1.at("drops")), 0u) << up1.dump();
  EXPECT_EQ(total(p1.at("drops")), 0u) << p1.dump();
  EXPECT_GT(u(p1, "waits"), 0u) << "frames waited, so the guest's port counts waits";
  // Frames the guest handed over == frames the uplink sent == frames that
  // left the node's veth (or that veth dropped and counted).
  EXPECT_EQ(u(p1, "rx_packets"), c.tx);
  EXPECT_EQ(uplink_sent, c.tx + vm2_sent);
  EXPECT_EQ((node1.tx_packets - node0.tx_packets) + (node1.tx_dropped - node0.tx_dropped),
            uplink_sent);
  EXPECT_EQ(u(up1, "tx_invalid_descs"), 0u);
}

INSTANTIATE_TEST_SUITE_P(GuestThread, BackPressure, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return info.param == 0 ? std::string("OnTheUplinksThread")
                                                  : std::string("ThroughAMailbox");
                         });

}  // namespace
}  // namespace xdpvhost::uplink_test
