// The uplink metrics as written from the values the daemon hands over.

#include "uplink_metrics.hpp"

#include <prometheus/text_serializer.h>

#include <gtest/gtest.h>

#include <set>
#include <sstream>

namespace xdpvhost::daemon::metrics {
namespace {

std::vector<UplinkMetrics> sample_uplinks() {
  UplinkMetrics u;
  u.name = "up0";
  u.interface = "eth1";
  u.bind = "auto";
  u.link = "up";
  u.xdp.oversize_dropped = 3;
  u.xdp.redirected = 1000;
  for (std::uint32_t q : {0u, 1u}) {
    UplinkQueueMetrics m;
    m.queue = q;
    m.thread = static_cast<std::uint16_t>(q);
    m.bind_mode = "copy";
    m.napi_id = 8193 + q;
    m.napi_busy_poll_active = q == 1;
    using dataplane::counter_index;
    using dataplane::kPortCounters;
    using dataplane::kUplinkQueueCounters;
    using dataplane::PortCounters;
    using dataplane::UplinkQueueCounters;
    m.stats.queue = q;
    m.stats.port.counters[counter_index(kPortCounters, &PortCounters::rx_packets)] = 100 + q;
    m.stats.port.counters[counter_index(kPortCounters, &PortCounters::tx_bytes)] = 64000;
    m.stats.port.drops[static_cast<std::size_t>(dataplane::DropReason::kUplinkTxFull)] = 9;
    auto queue_counter = [&](dataplane::Counter UplinkQueueCounters::*member) -> std::uint64_t& {
      return m.stats.counters[counter_index(kUplinkQueueCounters, member)];
    };
    queue_counter(&UplinkQueueCounters::rx_dropped) = 1;
    queue_counter(&UplinkQueueCounters::rx_ring_full) = 2;
    queue_counter(&UplinkQueueCounters::rx_fill_ring_empty_descs) = 4;
    queue_counter(&UplinkQueueCounters::tx_ring_empty_descs) = 5;
    u.queues.push_back(m);
  }
  return {u};
}

std::string exposition(const std::vector<UplinkMetrics>& uplinks,
                       Breakdowns listed = Breakdowns::kCounted) {
  Families families;
  add_uplink_families(families, uplinks, listed);
  return prometheus::TextSerializer().Serialize(families);
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

TEST(UplinkMetrics, QueuesInfoAndXdpStatistics) {
  const std::string t = exposition(sample_uplinks());
  EXPECT_TRUE(has_line(t, R"(xdpvhost_uplink_info{uplink="up0",interface="eth1",bind="auto"} 1)"))
      << t;
  EXPECT_TRUE(has_line(t, R"(xdpvhost_uplink_link_state{uplink="up0",state="up"} 1)"));
  EXPECT_TRUE(has_line(t, R"(xdpvhost_uplink_link_state{uplink="up0",state="absent"} 0)"));
  EXPECT_TRUE(has_line(
      t,
      R"(xdpvhost_uplink_queue_info{uplink="up0",queue="1",bind_mode="copy",napi_id="8194",thread="1"} 1)"));
  EXPECT_TRUE(
      has_line(t, R"(xdpvhost_uplink_queue_napi_busy_poll_active{uplink="up0",queue="0"} 0)"));
  EXPECT_TRUE(
      has_line(t, R"(xdpvhost_uplink_queue_napi_busy_poll_active{uplink="up0",queue="1"} 1)"));
  EXPECT_TRUE(
      has_line(t, R"(xdpvhost_uplink_packets_total{uplink="up0",queue="1",direction="rx"} 101)"));
  EXPECT_TRUE(
      has_line(t, R"(xdpvhost_uplink_bytes_total{uplink="up0",queue="0",direction="tx"} 64000)"));
  EXPECT_TRUE(has_line(
      t, R"(xdpvhost_uplink_drops_total{uplink="up0",queue="0",reason="uplink_tx_full"} 9)"));
  EXPECT_TRUE(has_line(t, R"(xdpvhost_uplink_xsk_rx_dropped_total{uplink="up0",queue="0"} 1)"));
  EXPECT_TRUE(has_line(t, R"(xdpvhost_uplink_xsk_rx_ring_full_total{uplink="up0",queue="1"} 2)"));
  EXPECT_TRUE(has_line(
      t, R"(xdpvhost_uplink_xsk_rx_fill_ring_empty_descs_total{uplink="up0",queue="0"} 4)"));
  EXPECT_TRUE(
      has_line(t, R"(xdpvhost_uplink_xsk_tx_ring_empty_descs_total{uplink="up0",queue="0"} 5)"));
  EXPECT_TRUE(
      has_line(t, R"(xdpvhost_uplink_xsk_rx_invalid_descs_total{uplink="up0",queue="0"} 0)"));
  EXPECT_TRUE(
      has_line(t, R"(xdpvhost_uplink_xsk_tx_invalid_descs_total{uplink="up0",queue="0"} 0)"));
  EXPECT_TRUE(has_line(
      t, R"(xdpvhost_uplink_xdp_frames_total{uplink="up0",outcome="oversize_dropped"} 3)"));
  EXPECT_TRUE(
      has_line(t, R"(xdpvhost_uplink_xdp_frames_total{uplink="up0",outcome="redirected"} 1000)"));
  EXPECT_TRUE(
      has_line(t, R"(xdpvhost_uplink_xdp_frames_total{uplink="up0",outcome="bypassed"} 0)"));
}

// Drops by reason: a reason has a series once it has counted, every reason
// with metrics.zero_breakdowns.
TEST(UplinkMetrics, DropReasonsListedOnceCountedOrAll) {
  const std::string counted = exposition(sample_uplinks());
  EXPECT_TRUE(has_line(
      counted, R"(xdpvhost_uplink_drops_total{uplink="up0",queue="1",reason="uplink_tx_full"} 9)"));
  EXPECT_EQ(counted.find(R"(reason="no_rx_buffer")"), std::string::npos) << counted;
  const std::string all = exposition(sample_uplinks(), Breakdowns::kAll);
  EXPECT_TRUE(has_line(
      all, R"(xdpvhost_uplink_drops_total{uplink="up0",queue="1",reason="no_rx_buffer"} 0)"));
  EXPECT_TRUE(has_line(
      all, R"(xdpvhost_uplink_drops_total{uplink="up0",queue="0",reason="uplink_tx_full"} 9)"));
  // The port's own totals are listed either way.
  EXPECT_TRUE(has_line(
      counted, R"(xdpvhost_uplink_packets_total{uplink="up0",queue="0",direction="tx"} 0)"));
}

TEST(UplinkMetrics, EveryFamilyOnceEvenWithoutUplinks) {
  const std::string with = exposition(sample_uplinks()), without = exposition({});
  auto types = [](const std::string& text) {
    std::multiset<std::string> families;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);)
      if (l.rfind("# TYPE ", 0) == 0) families.insert(l);
    return families;
  };
  const auto a = types(with), b = types(without);
  EXPECT_EQ(a, b);
  EXPECT_EQ(std::set<std::string>(a.begin(), a.end()).size(), a.size());  // no family twice
  std::istringstream in(without);
  for (std::string l; std::getline(in, l);) EXPECT_EQ(l[0], '#') << l;
}

}  // namespace
}  // namespace xdpvhost::daemon::metrics
