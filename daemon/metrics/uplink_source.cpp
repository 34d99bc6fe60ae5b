#include "uplink_source.hpp"

namespace xdpvhost::daemon::metrics {

std::vector<UplinkMetrics> collect_uplink_metrics(const Daemon& daemon) {
  std::vector<UplinkMetrics> out;
  for (const auto& config : daemon.config().uplinks) {
    const auto* u = daemon.find_uplink(config.name);
    if (u == nullptr) continue;
    UplinkMetrics m;
    m.name = config.name;
    m.interface = config.interface;
    m.bind = std::string(to_string(config.bind));
    m.link = dataplane::to_string(u->link());
    m.xdp = u->program_stats();
    const auto reports = u->queue_reports();
    for (const auto& port : u->ports()) {
      const auto s = UplinkQueueStatsSnapshot::of(*port);
      UplinkQueueMetrics q;
      q.queue = s.queue;
      q.port = s.port;
      q.rx_dropped = s.rx_dropped;
      q.rx_invalid_descs = s.rx_invalid_descs;
      q.tx_invalid_descs = s.tx_invalid_descs;
      q.rx_ring_full = s.rx_ring_full;
      q.rx_fill_ring_empty_descs = s.rx_fill_ring_empty_descs;
      q.tx_ring_empty_descs = s.tx_ring_empty_descs;
      q.flood_dropped = s.flood_dropped;
      for (const auto& r : reports)
        if (r.queue == s.queue) {
          q.thread = r.thread;
          q.bind_mode = r.bind_mode;
          q.napi_id = r.napi_id;
          q.napi_busy_poll_active = r.napi_active;
        }
      m.queues.push_back(std::move(q));
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace xdpvhost::daemon::metrics
