#pragma once
// The uplink part of the metrics: what the exporter needs from each uplink,
// as plain values, and the prometheus-cpp MetricFamily values made of them
// (family_builder.hpp). uplink_source.hpp fills them from the daemon's
// uplink objects (relaxed-atomic counters, the sockets' XDP_STATISTICS, the
// XDP program's counters) on the control thread.

#include <cstdint>
#include <string>
#include <vector>

#include "family_builder.hpp"
#include "stats_snapshot.hpp"
#include "xsk/xdp_program.hpp"

namespace xdpvhost::daemon::metrics {

struct UplinkQueueMetrics {
  std::uint32_t queue = 0;    // NIC queue id
  std::uint16_t thread = 0;   // service thread the queue's socket is on
  std::string bind_mode;      // in use: zerocopy | copy | unbound
  std::uint32_t napi_id = 0;  // SO_INCOMING_NAPI_ID, 0 while unknown
  bool napi_busy_poll_active = false;
  PortStatsSnapshot port;  // the queue port: rx/tx packets and bytes, drops by reason
  // XDP_STATISTICS of the queue's AF_XDP socket, cumulative (not reset by a re-bind).
  std::uint64_t rx_dropped = 0;
  std::uint64_t rx_invalid_descs = 0;
  std::uint64_t tx_invalid_descs = 0;
  std::uint64_t rx_ring_full = 0;
  std::uint64_t rx_fill_ring_empty_descs = 0;
  std::uint64_t tx_ring_empty_descs = 0;
  std::uint64_t flood_dropped = 0;  // broadcast/multicast frames the flood path dropped
};

struct UplinkMetrics {
  std::string name;
  std::string interface;
  std::string bind;  // configured: auto | zerocopy | copy
  std::string link;  // up | down | absent
  std::vector<UplinkQueueMetrics> queues;
  // The XDP steering program's counters, cumulative over re-attachments.
  xsk::XdpSteerStats xdp;
};

// Every xdpvhost_uplink_* family; the families are there (with no series)
// even when there are no uplinks, so dashboards see them.
void add_uplink_families(Families& out, const std::vector<UplinkMetrics>& uplinks);

}  // namespace xdpvhost::daemon::metrics
