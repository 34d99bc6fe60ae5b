#include "uplink_metrics.hpp"

#include <tuple>
#include <utility>

#include "counter_families.hpp"
#include "dataplane/drop_reason.hpp"

namespace xdpvhost::daemon::metrics {

namespace {

using prometheus::MetricType;

}  // namespace

void add_uplink_families(Families& out, const std::vector<UplinkMetrics>& uplinks,
                         Breakdowns listed) {
  {
    auto f =
        make_family("xdpvhost_uplink_info", MetricType::Gauge,
                    "Configured uplinks: interface and configured AF_XDP bind mode (value 1).");
    for (const auto& u : uplinks)
      add_info(f, {{"uplink", u.name}, {"interface", u.interface}, {"bind", u.bind}});
    out.push_back(std::move(f));
  }

  {
    auto f = make_family("xdpvhost_uplink_link_state", MetricType::Gauge,
                         "Operational state of the uplink's interface: 1 for the current state.");
    for (const auto& u : uplinks)
      for (const char* state : {"up", "down", "absent"})
        add_sample(f, {{"uplink", u.name}, {"state", state}},
                   std::uint64_t{u.link == state ? 1u : 0u});
    out.push_back(std::move(f));
  }

  {
    auto f = make_family(
        "xdpvhost_uplink_queue_info", MetricType::Gauge,
        "Uplink queues: bind mode in use (zerocopy, copy, unbound), NAPI id and service "
        "thread (value 1).");
    for (const auto& u : uplinks)
      for (const auto& q : u.queues) {
        const std::string queue = std::to_string(q.queue), napi = std::to_string(q.napi_id),
                          thread = std::to_string(q.thread);
        add_info(f, {{"uplink", u.name},
                     {"queue", queue},
                     {"bind_mode", q.bind_mode},
                     {"napi_id", napi},
                     {"thread", thread}});
      }
    out.push_back(std::move(f));
  }

  {
    auto f =
        make_family("xdpvhost_uplink_queue_napi_busy_poll_active", MetricType::Gauge,
                    "1 while the service thread drives the queue's NAPI context by busy polling.");
    for (const auto& u : uplinks)
      for (const auto& q : u.queues) {
        const std::string queue = std::to_string(q.queue);
        add_sample(f, {{"uplink", u.name}, {"queue", queue}},
                   std::uint64_t{q.napi_busy_poll_active ? 1u : 0u});
      }
    out.push_back(std::move(f));
  }

  std::vector<std::string> queue_ids;  // label storage, one per queue
  for (const auto& u : uplinks)
    for (const auto& q : u.queues) queue_ids.push_back(std::to_string(q.queue));
  std::vector<CounterRow<dataplane::kPortCounters.size()>> port_rows;
  std::vector<CounterRow<dataplane::kUplinkQueueCounters.size()>> queue_rows;
  std::vector<std::vector<Label>> labels;
  std::vector<dataplane::CounterValues<dataplane::kDropReasons>> drops;
  std::size_t id = 0;
  for (const auto& u : uplinks)
    for (const auto& q : u.queues) {
      labels.push_back({{"uplink", u.name}, {"queue", queue_ids[id++]}});
      port_rows.push_back({labels.back(), q.stats.port.counters});
      queue_rows.push_back({labels.back(), q.stats.counters});
      drops.push_back(q.stats.port.drops);
    }
  add_counter_families(out, "xdpvhost_uplink_", dataplane::kPortCounters, port_rows,
                       dataplane::PortScope::kAll);
  add_drop_family(out, "xdpvhost_uplink_", labels, drops, listed);
  add_counter_families(out, "xdpvhost_uplink_", dataplane::kUplinkQueueCounters, queue_rows);

  {
    auto f = make_family(
        "xdpvhost_uplink_xdp_frames_total", MetricType::Counter,
        "Frames the XDP steering program saw on the uplink's interface, by outcome: "
        "redirected (to a queue's AF_XDP socket), redirect_failed (no socket on the queue: "
        "passed to the kernel), passed_host, passed_flood, oversize_dropped, malformed, "
        "bypassed.");
    for (const auto& u : uplinks) {
      for (const auto& [outcome, n] :
           {std::pair{"redirected", u.xdp.redirected},
            std::pair{"redirect_failed", u.xdp.redirect_failed},
            std::pair{"passed_host", u.xdp.passed_host},
            std::pair{"passed_flood", u.xdp.passed_flood},
            std::pair{"oversize_dropped", u.xdp.oversize_dropped},
            std::pair{"malformed", u.xdp.malformed}, std::pair{"bypassed", u.xdp.bypassed}})
        add_sample(f, {{"uplink", u.name}, {"outcome", outcome}}, n);
    }
    out.push_back(std::move(f));
  }
}

}  // namespace xdpvhost::daemon::metrics
