// The uplink interface's life while the daemon runs: administratively down
// and up, carrier lost at the peer, deleted and re-created, configured
// before it exists, and a queue that appears later (ethtool -L). Each time
// the status reports the state, guest frames while the link is unusable are
// dropped as uplink_down, and traffic resumes in both directions afterwards
// -- without restarting the daemon.

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <thread>

#include "peer_sockets.hpp"
#include "uplink_fixture.hpp"

namespace xdpvhost::uplink_test {
namespace {

using namespace std::chrono_literals;

class LinkLifecycle : public UplinkTest {
 protected:
  std::string link() { return uplink_status().value("link", "?"); }
  std::string bind_mode() { return uplink_status().at("queues").at(0).value("bind_mode", "?"); }

  // uplink_down drops, wherever the daemon counts them (the uplink's queue
  // port, or the guest port when no uplink queue exists).
  std::uint64_t uplink_down_drops() {
    return u(uplink_stats().at("drops"), "uplink_down") +
           u(port_stats("vm1").at("drops"), "uplink_down");
  }

  // `count` guest frames to the peer while the uplink cannot send: all
  // dropped as uplink_down, none sent.
  void expect_dropped_as_uplink_down(int count) {
    const std::uint64_t drops0 = uplink_down_drops();
    const json up0 = uplink_stats();
    const LinkCounters peer0 = lab_.peer_link();
    for (int i = 0; i < count; ++i)
      ASSERT_TRUE(vm1_->send(
          vm1_->udp_to(kPeerMac, kPeerIp, 7100, 7101, testing::payload_pattern(100, 1))));
    ASSERT_TRUE(vm1_->wait_tx_done());
    EXPECT_TRUE(wait_for(
        [&] { return uplink_down_drops() - drops0 == static_cast<std::uint64_t>(count); }, 3s))
        << "uplink_down drops: " << uplink_down_drops() - drops0 << " of " << count
        << "; uplink stats " << uplink_stats().dump() << "; port " << port_stats("vm1").dump();
    EXPECT_EQ(u(uplink_stats(), "tx_packets"), u(up0, "tx_packets"));
    EXPECT_EQ(lab_.peer_link().rx_packets, peer0.rx_packets);
  }

  // Once lab_.create_veth() made the interface (again): the daemon binds it
  // in copy mode with its XDP program, the guest's MAC is in its unicast
  // filter, and traffic flows both ways.
  void expect_bound_to_the_new_interface() {
    ASSERT_TRUE(wait_for([&] { return link() == "up" && bind_mode() == "copy"; }))
        << uplink_status().dump();
    const auto programs = lab_.node_xdp_programs();
    ASSERT_EQ(programs.size(), 1u);
    EXPECT_EQ(programs[0].name, "xdpvhost_steer");
    EXPECT_NE(uplink_status().value("xdp_program", ""), "");
    EXPECT_TRUE(fdb_has(kVm1.mac)) << "the new interface's unicast filter lacks the guest";
    ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
  }

  std::unique_ptr<FrontendGuest> vm1_;
};

TEST_F(LinkLifecycle, AdministrativelyDownThenUp) {
  ASSERT_NO_FATAL_FAILURE(start_with_guest(vm1_));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
  const pid_t pid = daemon_->pid();

  std::string out;
  ASSERT_EQ(lab_.in_node(std::string("ip link set ") + UplinkLab::kNodeIf + " down", &out), 0)
      << out;
  ASSERT_TRUE(wait_for([&] { return link() == "down"; })) << uplink_status().dump();
  EXPECT_EQ(call("status").at("uplinks").at(0).value("link", ""), "down");
  ASSERT_NO_FATAL_FAILURE(expect_dropped_as_uplink_down(10));

  ASSERT_EQ(lab_.in_node(std::string("ip link set ") + UplinkLab::kNodeIf + " up", &out), 0) << out;
  ASSERT_TRUE(wait_for([&] { return link() == "up"; })) << uplink_status().dump();
  EXPECT_EQ(bind_mode(), "copy");
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
  EXPECT_EQ(daemon_->pid(), pid);
}

TEST_F(LinkLifecycle, CarrierLostAtThePeerThenBack) {
  ASSERT_NO_FATAL_FAILURE(start_with_guest(vm1_));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));

  std::string out;
  ASSERT_EQ(lab_.in_peer(std::string("ip link set ") + UplinkLab::kPeerIf + " down", &out), 0)
      << out;
  // veth: the node end stays administratively up, NO-CARRIER, operstate DOWN.
  ASSERT_TRUE(wait_for([&] { return lab_.node_operstate() == "DOWN"; }))
      << "node end: " << lab_.node_operstate();
  // The node end is administratively up but has no carrier: nothing it sends
  // arrives. The daemon should say so, and count the guest's frames.
  EXPECT_TRUE(wait_for([&] { return link() == "down"; }, 3s))
      << "no carrier, but the uplink reports link \"" << link() << "\"";
  ASSERT_NO_FATAL_FAILURE(expect_dropped_as_uplink_down(10));

  ASSERT_EQ(lab_.in_peer(std::string("ip link set ") + UplinkLab::kPeerIf + " up", &out), 0) << out;
  ASSERT_TRUE(wait_for([&] { return link() == "up" && lab_.node_operstate() == "UP"; }))
      << uplink_status().dump();
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
}

TEST_F(LinkLifecycle, DeletedAndCreatedAgain) {
  ASSERT_NO_FATAL_FAILURE(start_with_guest(vm1_));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
  const pid_t pid = daemon_->pid();

  std::string out;
  ASSERT_TRUE(lab_.delete_veth(&out)) << out;
  ASSERT_TRUE(wait_for([&] { return link() == "absent"; })) << uplink_status().dump();
  const json status = uplink_status();
  EXPECT_EQ(status.at("queues").at(0).value("bind_mode", ""), "unbound") << status.dump();
  EXPECT_EQ(status.value("xdp_program", "?"), "") << status.dump();
  ASSERT_NO_FATAL_FAILURE(expect_dropped_as_uplink_down(10));

  ASSERT_TRUE(lab_.create_veth(out)) << out;
  ASSERT_NO_FATAL_FAILURE(expect_bound_to_the_new_interface());
  EXPECT_TRUE(daemon_->running());
  EXPECT_EQ(daemon_->pid(), pid);
}

// A node's uplink that flaps for days, compressed: 1000 down/up flaps (in
// bursts of 100, as fast as ip can make them) and 30 deletions and
// re-creations (three back to back, ten times) through the running daemon.
// It follows every one (after each burst the status says up and the queue
// is bound), traffic flows afterwards, and the daemon holds what it held
// before: fds by kind, every kind of mapping, its threads, its BPF objects,
// and about its memory (the resource ledger in status).
TEST_F(LinkLifecycle, AThousandFlapsAndThirtyRecreationsHoldNothing) {
  constexpr int kBursts = 10;
  constexpr int kFlapsPerBurst = 100;
  constexpr int kRecreationRounds = 10;
  constexpr int kRecreationsPerRound = 3;
  ASSERT_NO_FATAL_FAILURE(start_with_guest(vm1_));
  std::string out;
  std::string batch;  // `ip -batch` input: one burst of flaps
  for (int i = 0; i < kFlapsPerBurst; ++i)
    batch += std::string("link set ") + UplinkLab::kNodeIf + " down\nlink set " +
             UplinkLab::kNodeIf + " up\n";
  const std::string batch_file = "/tmp/xdpvhost-flaps-" + std::to_string(::getpid());
  {
    std::ofstream f(batch_file);
    f << batch;
  }
  const auto flaps = [&] {
    ASSERT_EQ(lab_.in_node("ip -batch " + batch_file, &out), 0) << out;
    ASSERT_TRUE(wait_for([&] { return link() == "up" && bind_mode() == "copy"; }))
        << uplink_status().dump();
  };
  const auto recreations = [&](int n) {
    for (int i = 0; i < n; ++i) {
      ASSERT_TRUE(lab_.delete_veth(&out)) << out;
      ASSERT_TRUE(lab_.create_veth(out)) << out;
    }
    ASSERT_TRUE(wait_for([&] { return link() == "up" && bind_mode() == "copy"; }))
        << uplink_status().dump();
  };
  // Warm-up: what is allocated once (libbpf's caches, the allocator's
  // arenas) is in the baseline.
  ASSERT_NO_FATAL_FAILURE(flaps());
  ASSERT_NO_FATAL_FAILURE(recreations(1));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
  const json before = call("status").at("resources");
  for (int i = 0; i < kBursts; ++i) ASSERT_NO_FATAL_FAILURE(flaps()) << "burst " << i;
  for (int i = 0; i < kRecreationRounds; ++i)
    ASSERT_NO_FATAL_FAILURE(recreations(kRecreationsPerRound)) << "round " << i;
  std::remove(batch_file.c_str());
  ASSERT_NO_FATAL_FAILURE(expect_bound_to_the_new_interface());
  const json after = call("status").at("resources");
  std::printf("%d flaps, %d re-creations: fds %s -> %s, rss %s -> %s bytes\n",
              kBursts * kFlapsPerBurst, kRecreationRounds * kRecreationsPerRound,
              before.at("fds").at("total").dump().c_str(),
              after.at("fds").at("total").dump().c_str(), before.at("rss_bytes").dump().c_str(),
              after.at("rss_bytes").dump().c_str());
  EXPECT_EQ(after.at("fds"), before.at("fds"));
  EXPECT_EQ(after.at("mapped"), before.at("mapped"));
  EXPECT_EQ(after.at("threads"), before.at("threads"));
  EXPECT_EQ(after.at("bpf_maps").size(), before.at("bpf_maps").size());
  EXPECT_EQ(after.at("bpf_programs").size(), before.at("bpf_programs").size());
  EXPECT_LT(after.at("rss_bytes").get<std::int64_t>() - before.at("rss_bytes").get<std::int64_t>(),
            4 << 20)
      << "the daemon's memory grew";
}

TEST_F(LinkLifecycle, InterfaceThatAppearsAfterTheDaemonStarted) {
  std::string out;
  ASSERT_TRUE(lab_.delete_veth(&out)) << out;
  ASSERT_NO_FATAL_FAILURE(start_with_guest(vm1_));
  EXPECT_EQ(link(), "absent");
  EXPECT_EQ(bind_mode(), "unbound");
  ASSERT_NO_FATAL_FAILURE(expect_dropped_as_uplink_down(5));

  ASSERT_TRUE(lab_.create_veth(out)) << out;
  ASSERT_NO_FATAL_FAILURE(expect_bound_to_the_new_interface());
}

TEST_F(LinkLifecycle, AProgramDetachedBehindItsBackIsAttachedAgain) {
  ASSERT_NO_FATAL_FAILURE(start_with_guest(vm1_));
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
  const auto before = lab_.node_xdp_programs();
  ASSERT_EQ(before.size(), 1u);
  std::string out;
  const std::string set = std::string("ip link set dev ") + UplinkLab::kNodeIf;
  ASSERT_EQ(lab_.in_node(set + " xdp off", &out), 0) << out;
  lab_.in_node(set + " xdpgeneric off", &out);  // if it was attached in skb mode
  ASSERT_TRUE(lab_.node_xdp_programs().empty());
  // Noticed at the next try (every 5 s), attached again, traffic resumes.
  ASSERT_TRUE(wait_for(
      [&] {
        const auto now = lab_.node_xdp_programs();
        return now.size() == 1 && now[0].id != before[0].id;
      },
      15s))
      << "no program on the interface: " << uplink_status().dump();
  EXPECT_EQ(lab_.node_xdp_programs()[0].name, "xdpvhost_steer");
  ASSERT_TRUE(wait_for([&] { return link() == "up" && bind_mode() == "copy"; }))
      << uplink_status().dump();
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
}

TEST_F(LinkLifecycle, AQueueThatAppearsLaterIsBoundAndNothingSpinsMeanwhile) {
  std::string out;
  ASSERT_TRUE(lab_.delete_veth(&out)) << out;
  ASSERT_TRUE(lab_.create_veth(out, 2)) << out;
  const std::string channels = std::string("ethtool -L ") + UplinkLab::kNodeIf;
  ASSERT_EQ(lab_.in_node(channels + " rx 1 tx 1", &out), 0) << out;
  // Queue 1 first: it cannot be bound yet, and the broadcast socket must go
  // to the queue that is (a socket nobody reads kept the thread awake).
  json uplink = uplink_config();
  uplink["queues"] = json::array({1, 0});
  ASSERT_NO_FATAL_FAILURE(
      start_daemon(daemon_config(json::array({uplink}), json::array({port_config(kVm1)}))));
  ASSERT_NO_FATAL_FAILURE(connect_guest(vm1_, kVm1));
  auto bind_mode_of = [&](std::size_t i) {
    return uplink_status().at("queues").at(i).value("bind_mode", "?");
  };
  EXPECT_EQ(bind_mode_of(0), "unbound") << uplink_status().dump();
  ASSERT_EQ(bind_mode_of(1), "copy") << uplink_status().dump();

  // Broadcasts from the peer reach the guest.
  std::unique_ptr<PacketSocket> peer;
  {
    NetnsScope in(lab_.peer_fd());
    ASSERT_TRUE(in.ok());
    peer = std::make_unique<PacketSocket>(UplinkLab::kPeerIf);
  }
  std::vector<std::uint8_t> frame(60, 0);
  std::fill_n(frame.begin(), 6, 0xff);
  std::copy(kPeerMac.begin(), kPeerMac.end(), frame.begin() + 6);
  frame[12] = 0x88;  // local experimental EtherType
  frame[13] = 0xb5;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(peer->send(frame));
  auto is_ours = [](const PacketView& v) { return v.ethertype == 0x88b5; };
  EXPECT_TRUE(vm1_->pump_until(is_ours, 5)) << vm1_->count(is_ours) << " of 5 broadcasts";

  // The service thread sleeps when idle: it is not woken without end.
  auto wakeups = [&] { return u(call("stats.get").at("threads").at(0), "wakeups"); };
  const std::uint64_t w0 = wakeups();
  std::this_thread::sleep_for(1s);
  EXPECT_LT(wakeups() - w0, 1000u) << "an idle service thread kept waking";

  // The queue appears: it is bound at the next try (every 5 s).
  ASSERT_EQ(lab_.in_node(channels + " rx 2 tx 2", &out), 0) << out;
  EXPECT_TRUE(wait_for([&] { return bind_mode_of(0) == "copy"; }, 15s)) << uplink_status().dump();
  ASSERT_NO_FATAL_FAILURE(check_udp_both_ways(*vm1_, kVm1));
}

}  // namespace
}  // namespace xdpvhost::uplink_test
