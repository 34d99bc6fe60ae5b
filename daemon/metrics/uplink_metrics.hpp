#pragma once
// The uplink part of the metrics: what the exporter needs from each uplink,
// as plain values, and the prometheus-cpp MetricFamily values made of them
// (family_builder.hpp). uplink_source.hpp fills them from the daemon's
// uplink objects (relaxed-atomic counters, the sockets' XDP_STATISTICS, the
// XDP program's counters) on the control thread.

#include <cstdint>
#include <string>
#include <vector>

#include "counter_families.hpp"
#include "control/stats_snapshot.hpp"
#include "nic/xdp_program.hpp"

namespace xdpvhost::daemon::metrics {

struct UplinkQueueMetrics {
  std::uint32_t queue = 0;    // NIC queue id
  std::uint16_t thread = 0;   // service thread the queue's socket is on
  std::string bind_mode;      // in use: zerocopy | copy | unbound
  std::uint32_t napi_id = 0;  // SO_INCOMING_NAPI_ID, 0 while unknown
  bool napi_busy_poll_active = false;
  // The queue port's counters (rx/tx packets and bytes, drops by reason) and
  // the queue's own (XDP_STATISTICS, cumulative over re-binds; kicks; flood).
  UplinkQueueStatsSnapshot stats;
};

struct UplinkMetrics {
  std::string name;
  std::string interface;
  std::string bind;  // configured: auto | zerocopy | copy
  std::string link;  // up | down | absent
  std::vector<UplinkQueueMetrics> queues;
  // The XDP steering program's counters, cumulative over re-attachments.
  nic::XdpSteerStats xdp;
};

// Every xdpvhost_uplink_* family; the families are there (with no series)
// even when there are no uplinks, so dashboards see them. drops_total lists
// the reasons as `listed` says.
void add_uplink_families(Families& out, const std::vector<UplinkMetrics>& uplinks,
                         Breakdowns listed);

}  // namespace xdpvhost::daemon::metrics
