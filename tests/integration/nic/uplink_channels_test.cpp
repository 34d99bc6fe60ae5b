// An uplink with queues "all" on a veth whose channels change (ethtool -L):
// the NIC's RX queue count (ETHTOOL_GCHANNELS), the kernel's channel
// notification (the ethtool netlink family's monitor group), and the
// controller binding a socket on every queue the NIC has, at the
// notification, without waiting for its periodic check. Fewer channels than
// the queues bound are refused by the kernel; an interface made again with
// fewer has its queues beyond them unbound (counters kept). Then 2000
// periodic checks hold no fd or mapping.

#include <boost/asio/io_context.hpp>
#include <net/if.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "controller/uplink_controller.hpp"
#include "dataplane/dataplane.hpp"
#include "netns_fixture.hpp"
#include "nic/channels.hpp"
#include "sys/resource_ledger.hpp"

namespace xdpvhost::xsk::test {
namespace {

using namespace std::chrono_literals;

class UplinkChannels : public NetnsPair {
 protected:
  static constexpr const char* kIf = "xskq0";

  void SetUp() override {
    NetnsPair::SetUp();
    std::string out;
    ASSERT_EQ(run_in_a(std::string("ip link add ") + kIf +
                           " numrxqueues 4 numtxqueues 4 type veth peer name xskq1 "
                           "numrxqueues 4 numtxqueues 4 && ip link set " +
                           kIf + " up && ip link set xskq1 up",
                       &out),
              0)
        << out;
    channels(1);
  }

  void channels(int n) {
    std::string out;
    ASSERT_EQ(run_in_a(std::string("ethtool -L ") + kIf + " rx " + std::to_string(n) + " tx " +
                           std::to_string(n),
                       &out),
              0)
        << out;
  }

  std::uint32_t count() {
    std::string why;
    auto n = nic::rx_queue_count(kIf, why);
    EXPECT_TRUE(n.has_value()) << why;
    return n.value_or(0);
  }
};

TEST_F(UplinkChannels, TheCountAndTheNotificationFollowEthtool) {
  EXPECT_EQ(count(), 1u);
  std::string why;
  auto monitor = nic::ChannelMonitor::open(why);
  ASSERT_NE(monitor, nullptr) << why;
  channels(3);
  EXPECT_EQ(count(), 3u);
  std::vector<std::uint32_t> changed;
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (changed.empty() && std::chrono::steady_clock::now() < deadline) {
    ASSERT_GE(monitor->read_events(changed), 0);
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_FALSE(changed.empty()) << "no channel notification";
  EXPECT_NE(std::find(changed.begin(), changed.end(), ::if_nametoindex(kIf)), changed.end());
  EXPECT_FALSE(nic::rx_queue_count("xskq-absent", why).has_value());
  EXPECT_NE(why.find("xskq-absent"), std::string::npos) << why;
}

TEST_F(UplinkChannels, AllQueuesFollowTheNicAndHoldNothingOverThousandsOfChecks) {
  boost::asio::io_context io;
  dataplane::Dataplane dataplane(dataplane::Dataplane::Options{});
  controller::UplinkConfig config;
  config.name = "up0";
  config.interface = kIf;
  config.bind = xsk::BindMode::kCopy;
  config.ring_size = 256;
  ASSERT_FALSE(config.queues.has_value()) << "\"all\" is the default";
  controller::UplinkController uplink(dataplane, io, config, 1, dataplane::Tunables{}, "");
  std::string error;
  ASSERT_TRUE(uplink.start(error)) << error;
  io.poll();
  const auto modes = [&] {
    std::vector<std::string> out;
    for (const auto& q : uplink.queue_reports())
      out.push_back(std::to_string(q.queue) + ":" + q.bind_mode);
    return out;
  };
  const auto settle = [&](const std::vector<std::string>& want) {
    const auto deadline = std::chrono::steady_clock::now() + 3s;
    while (modes() != want && std::chrono::steady_clock::now() < deadline) {
      io.restart();
      io.run_for(10ms);
    }
    return modes();
  };
  EXPECT_EQ(modes(), (std::vector<std::string>{"0:copy"}));
  EXPECT_EQ(uplink.nic_rx_queues(), 1u);
  // At the kernel's notification: no periodic check runs here.
  channels(3);
  EXPECT_EQ(settle({"0:copy", "1:copy", "2:copy"}),
            (std::vector<std::string>{"0:copy", "1:copy", "2:copy"}));
  EXPECT_EQ(uplink.nic_rx_queues(), 3u);
  // Fewer channels than the queues bound: the kernel refuses (an AF_XDP
  // socket's queue may not go away), and nothing changes.
  std::string out;
  EXPECT_NE(run_in_a(std::string("ethtool -L ") + kIf + " rx 1 tx 1", &out), 0);
  EXPECT_NE(out.find("too low for existing zerocopy AF_XDP sockets"), std::string::npos) << out;
  io.restart();
  io.run_for(100ms);
  EXPECT_EQ(modes(), (std::vector<std::string>{"0:copy", "1:copy", "2:copy"}));
  // The interface made again with fewer: its queues bound, the others
  // unbound (their counters kept).
  ASSERT_EQ(run_in_a(std::string("ip link del ") + kIf + " && ip link add " + kIf +
                         " numrxqueues 4 numtxqueues 4 type veth peer name xskq1 numrxqueues 4 "
                         "numtxqueues 4 && ip link set xskq1 up && ethtool -L " +
                         kIf + " rx 2 tx 2 && ip link set " + kIf + " up",
                     &out),
            0)
      << out;
  EXPECT_EQ(settle({"0:copy", "1:copy", "2:unbound"}),
            (std::vector<std::string>{"0:copy", "1:copy", "2:unbound"}));
  EXPECT_EQ(uplink.nic_rx_queues(), 2u);
  channels(4);
  EXPECT_EQ(settle({"0:copy", "1:copy", "2:copy", "3:copy"}),
            (std::vector<std::string>{"0:copy", "1:copy", "2:copy", "3:copy"}));
  // The periodic path, thousands of times (each counts the NIC's queues).
  const sys::ResourceLedger before = sys::take_resource_ledger();
  for (int i = 1; i <= 2000; ++i) {
    uplink.periodic_check();
    io.restart();
    io.poll();
  }
  const sys::ResourceLedger after = sys::take_resource_ledger();
  std::printf("2000 checks; fds %u -> %u\n", before.fds_total(), after.fds_total());
  EXPECT_EQ(modes(), (std::vector<std::string>{"0:copy", "1:copy", "2:copy", "3:copy"}));
  EXPECT_EQ(after.fds, before.fds);
  EXPECT_EQ(after.mapped.bytes, before.mapped.bytes);
  EXPECT_EQ(after.mapped.count, before.mapped.count);
  EXPECT_EQ(after.threads, before.threads);
}

}  // namespace
}  // namespace xdpvhost::xsk::test
