// Connection and device lifecycle: disconnects mid-traffic, reconnects with
// and without the old rings, GET_VRING_BASE and stop/start, device reset,
// client mode reconnecting, a second frontend refused, ports added and
// removed at run time, SIGTERM with guests connected.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "daemon_test.hpp"
#include "guest_traffic.hpp"

namespace xdpvhost::integration {
namespace {

const fe::MacAddress kMacA = fe::make_mac(1);
const fe::MacAddress kMacB = fe::make_mac(2);
const fe::MacAddress kMacC = fe::make_mac(3);

class Lifecycle : public DaemonTest {};

TEST_F(Lifecycle, DisconnectMidTrafficThenANewFrontendFindsACleanPort) {
  start_daemon({port("a", 1), port("b", 2)});
  auto b = connect_receiving_guest("b");
  std::vector<Bytes> sent;
  for (std::uint32_t i = 0; i < 200; ++i) sent.push_back(numbered_frame(kMacB, kMacA, i, 300));
  {
    auto a = connect_guest("a");
    ASSERT_TRUE(a);
    ASSERT_TRUE(stream(*a, *b, std::vector<Bytes>(sent.begin(), sent.begin() + 10)));
    // Queue a lot and go away while the daemon is still at it.
    for (std::size_t i = 10; i < sent.size(); ++i) {
      if (!a->send_frame(sent[i])) break;
    }
  }
  EXPECT_TRUE(wait_until([&] { return port_state("a") == "waiting"; })) << port_get("a").dump();
  const auto detail = port_get("a");
  EXPECT_TRUE(detail.at("queues").empty()) << detail.dump();
  EXPECT_EQ(detail.at("features"), "0x0");
  EXPECT_EQ(detail.at("protocol_features"), "0x0");
  // Whatever got through did so intact and in order.
  auto got = receive(*b, sent.size() - 10, 200ms);
  ASSERT_LE(got.size(), sent.size() - 10);
  EXPECT_TRUE(
      same_frames(std::vector<Bytes>(sent.begin() + 10,
                                     sent.begin() + 10 + static_cast<std::ptrdiff_t>(got.size())),
                  got));

  auto a = connect_receiving_guest("a");
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 100, 1000));
  EXPECT_EQ(port_state("a"), "running");
  EXPECT_EQ(port_state("b"), "running");
}

TEST_F(Lifecycle, ReconnectResumingTheOldRingsLosesAndRepeatsNothing) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(exchange(*a, kMacA, *b, kMacB, 100, 0));
  ASSERT_TRUE(tx_drained(*a));
  a->disconnect();  // QEMU keeps the rings and takes used->idx as the next base
  EXPECT_TRUE(wait_until([&] { return port_state("a") == "waiting"; }));
  // Frames queued while no backend serves the ring wait there.
  std::vector<Bytes> queued;
  for (std::uint32_t i = 0; i < 20; ++i) queued.push_back(numbered_frame(kMacB, kMacA, 500 + i));
  for (const auto& f : queued) ASSERT_TRUE(a->send_frame(f, std::nullopt, {.kick = false}));
  ASSERT_TRUE(a->connect()) << a->last_error();
  ASSERT_TRUE(a->negotiate({}, /*resume=*/true)) << a->last_error();
  EXPECT_EQ(a->tx_queue().device_base(), 100);
  a->tx_queue().notify();
  EXPECT_TRUE(same_frames(queued, receive(*b, queued.size())));
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 100, 2000));
  EXPECT_TRUE(poll_received(*b).empty());
}

TEST_F(Lifecycle, GetVringBaseReportsTheFramesTakenAndStopStartResumes) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  std::vector<Bytes> ab;
  for (std::uint32_t i = 0; i < 300; ++i) ab.push_back(numbered_frame(kMacB, kMacA, i, 200));
  ASSERT_TRUE(stream(*a, *b, ab));
  ASSERT_TRUE(tx_drained(*a));

  auto bases = a->stop();  // SET_STATUS 0, GET_VRING_BASE per ring
  ASSERT_TRUE(bases) << a->last_error();
  EXPECT_EQ((*bases)[1], 300) << "TX base after 300 frames";
  EXPECT_EQ((*bases)[0], 0) << "RX base: a received nothing";
  EXPECT_EQ(a->channel().get_status(), std::optional<std::uint8_t>(0));
  auto detail = port_get("a");
  EXPECT_EQ(detail.at("state"), "connected") << detail.dump();
  for (const auto& q : detail.at("queues")) EXPECT_EQ(q.at("state"), "stopped") << q.dump();

  // While a is stopped, frames for it are dropped and counted.
  ASSERT_TRUE(send_frames(*b, {numbered_frame(kMacA, kMacB, 1)}));
  EXPECT_TRUE(wait_until([&] { return drops("a", "port_not_ready") == 1; })) << stats("a").dump();

  ASSERT_TRUE(a->start()) << a->last_error();  // rings again from the bases
  EXPECT_EQ(port_state("a"), "running");
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 50, 1000));
  ASSERT_TRUE(tx_drained(*a));
  bases = a->stop();
  ASSERT_TRUE(bases) << a->last_error();
  EXPECT_EQ((*bases)[1], 350);
  EXPECT_EQ((*bases)[0], 50);
  auto b_bases = b->stop();
  ASSERT_TRUE(b_bases) << b->last_error();
  EXPECT_EQ((*b_bases)[0], 350) << "b took one receive chain per frame";
  EXPECT_EQ((*b_bases)[1], 51);
}

TEST_F(Lifecycle, ResetDeviceThenANewNegotiationWorks) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(exchange(*a, kMacA, *b, kMacB, 30, 0));
  ASSERT_TRUE(a->channel().reset_device()) << a->channel().last_error();
  EXPECT_TRUE(wait_until([&] { return port_state("a") == "connected"; })) << port_get("a").dump();
  EXPECT_TRUE(port_get("a").at("queues").empty()) << port_get("a").dump();
  ASSERT_TRUE(a->negotiate()) << a->last_error();
  post_rx(*a);
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 30, 100));
  // A guest reboot (stop, zeroed RAM, negotiation with base 0) as well.
  ASSERT_TRUE(a->reset_and_renegotiate()) << a->last_error();
  post_rx(*a);
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 30, 200));
}

TEST_F(Lifecycle, ClientModeConnectsAndReconnectsWhenTheFrontendComesBack) {
  start_daemon({port("c", 3, {{"mode", "client"}}), port("b", 2)});
  auto b = connect_receiving_guest("b");
  EXPECT_EQ(port_state("c"), "waiting");
  fe::FrontendOptions o;
  o.socket_path = socket_path("c");
  o.role = fe::Role::kServer;
  for (int round = 0; round < 3; ++round) {
    {
      fe::Frontend c(o);
      c.listen();
      ASSERT_TRUE(c.connect()) << "round " << round << ": "
                               << c.last_error();  // the daemon connects to us
      ASSERT_TRUE(c.negotiate()) << c.last_error();
      EXPECT_EQ(port_state("c"), "running");
      post_rx(c);
      EXPECT_TRUE(exchange(c, kMacC, *b, kMacB, 30, round * 1000u));
    }  // the frontend goes away (socket closed and removed)
    EXPECT_TRUE(wait_until([&] { return port_state("c") == "waiting"; })) << port_get("c").dump();
  }
  // Removing a client-mode port closes the connection but leaves the
  // frontend's socket file alone.
  fe::Frontend c(o);
  c.listen();
  ASSERT_TRUE(c.connect()) << c.last_error();
  ASSERT_TRUE(c.negotiate()) << c.last_error();
  rpc().call("port.remove", {{"name", "c"}});
  EXPECT_TRUE(c.channel().wait_peer_closed(10s));
  EXPECT_TRUE(std::filesystem::exists(socket_path("c")))
      << "the daemon removed the frontend's socket";
}

TEST_F(Lifecycle, ASecondFrontendOnTheSameSocketIsRefused) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  std::string error;
  auto second = fe::VhostUserChannel::connect_to(socket_path("a"), 5s, &error);
  ASSERT_TRUE(second.connected()) << error;
  EXPECT_TRUE(second.wait_peer_closed(10s)) << "the second connection was kept";
  EXPECT_FALSE(second.get_features().has_value());
  EXPECT_EQ(port_state("a"), "running");
  EXPECT_TRUE(exchange(*a, kMacA, *b, kMacB, 30, 0));
  EXPECT_EQ(a->channel().get_features(), std::optional<std::uint64_t>(a->offered_features()));
}

TEST_F(Lifecycle, PortsAddedAndRemovedWhileOthersRun) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(exchange(*a, kMacA, *b, kMacB, 20, 0));

  const auto added = rpc().call("port.add", port("c", 3));
  EXPECT_EQ(added.at("name"), "c");
  EXPECT_EQ(added.at("state"), "waiting");
  EXPECT_TRUE(std::filesystem::exists(socket_path("c")));
  auto c = connect_receiving_guest("c");
  EXPECT_TRUE(exchange(*a, kMacA, *c, kMacC, 20, 100));
  EXPECT_TRUE(exchange(*b, kMacB, *c, kMacC, 20, 200));

  // Remove b while its frontend is connected and a and c keep talking.
  EXPECT_EQ(rpc().call("port.remove", {{"name", "b"}}), (nlohmann::json{{"removed", "b"}}));
  EXPECT_TRUE(b->channel().wait_peer_closed(10s));
  EXPECT_FALSE(std::filesystem::exists(socket_path("b")))
      << "socket file of a removed port left behind";
  const auto gone = rpc().request("port.get", {{"name", "b"}});
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error->at("code"), -32002);
  EXPECT_FALSE(rpc().call("stats.get").at("ports").contains("b"));
  EXPECT_TRUE(exchange(*a, kMacA, *c, kMacC, 20, 300));
  ASSERT_TRUE(send_frames(*a, {numbered_frame(kMacB, kMacA, 1)}));
  EXPECT_TRUE(wait_until([&] { return drops("a", "unknown_destination") == 1; }))
      << stats("a").dump();

  // The name, MAC and socket can be used again.
  rpc().call("port.add", port("b", 2));
  auto b2 = connect_receiving_guest("b");
  EXPECT_TRUE(exchange(*a, kMacA, *b2, kMacB, 20, 400));
  const auto list = rpc().call("port.list");
  EXPECT_EQ(list.size(), 3u) << list.dump();
}

TEST_F(Lifecycle, SigtermWithGuestsConnectedAndTrafficFlowingExitsCleanly) {
  start_daemon({port("a", 1), port("b", 2)});
  auto a = connect_receiving_guest("a");
  auto b = connect_receiving_guest("b");
  ASSERT_TRUE(exchange(*a, kMacA, *b, kMacB, 20, 0));
  for (std::uint32_t i = 0; i < 100; ++i) a->send_frame(numbered_frame(kMacB, kMacA, 100 + i));
  EXPECT_EQ(daemon().terminate(10s), std::optional<int>(0));
  EXPECT_TRUE(a->channel().wait_peer_closed(5s));
  EXPECT_TRUE(b->channel().wait_peer_closed(5s));
  EXPECT_FALSE(std::filesystem::exists(socket_path("a")));
  EXPECT_FALSE(std::filesystem::exists(daemon().control_socket()));
}

}  // namespace
}  // namespace xdpvhost::integration
