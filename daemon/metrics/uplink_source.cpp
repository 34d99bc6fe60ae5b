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
    m.bind = xsk::to_string(config.bind);
    m.link = controller::to_string(u->link());
    m.xdp = u->program_stats();
    const auto reports = u->queue_reports();
    for (const auto& port : u->ports()) {
      UplinkQueueMetrics q;
      q.stats = UplinkQueueStatsSnapshot::of(*port);
      q.queue = q.stats.queue;
      for (const auto& r : reports)
        if (r.queue == q.queue) {
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
