#include "uplink_metrics.hpp"

#include <tuple>
#include <utility>

#include "dataplane/drop_reason.hpp"

namespace xdpvhost::daemon::metrics {

namespace {

using prometheus::MetricType;
using Q = UplinkQueueMetrics;

// One counter family with a series per uplink queue.
void per_queue(Families& out, const std::vector<UplinkMetrics>& uplinks, const char* name,
               const char* help, std::uint64_t Q::*field) {
  auto f = make_family(name, MetricType::Counter, help);
  for (const auto& u : uplinks)
    for (const auto& q : u.queues) {
      const std::string queue = std::to_string(q.queue);
      add_sample(f, {{"uplink", u.name}, {"queue", queue}}, q.*field);
    }
  out.push_back(std::move(f));
}

}  // namespace

void add_uplink_families(Families& out, const std::vector<UplinkMetrics>& uplinks) {
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

  for (const auto& [name, help, rx, tx] :
       {std::tuple{"xdpvhost_uplink_packets_total",
                   "Frames per uplink queue: rx received from the NIC, tx sent to it.",
                   &PortStatsSnapshot::rx_packets, &PortStatsSnapshot::tx_packets},
        std::tuple{"xdpvhost_uplink_bytes_total",
                   "Bytes per uplink queue: rx received from the NIC, tx sent to it.",
                   &PortStatsSnapshot::rx_bytes, &PortStatsSnapshot::tx_bytes}}) {
    auto f = make_family(name, MetricType::Counter, help);
    for (const auto& u : uplinks)
      for (const auto& q : u.queues) {
        const std::string queue = std::to_string(q.queue);
        add_sample(f, {{"uplink", u.name}, {"queue", queue}, {"direction", "rx"}}, q.port.*rx);
        add_sample(f, {{"uplink", u.name}, {"queue", queue}, {"direction", "tx"}}, q.port.*tx);
      }
    out.push_back(std::move(f));
  }

  {
    auto f = make_family("xdpvhost_uplink_drops_total", MetricType::Counter,
                         "Frames dropped at an uplink queue, by reason.");
    for (const auto& u : uplinks)
      for (const auto& q : u.queues) {
        const std::string queue = std::to_string(q.queue);
        for (std::size_t r = 0; r < q.port.drops.size(); ++r)
          add_sample(f,
                     {{"uplink", u.name},
                      {"queue", queue},
                      {"reason", dataplane::to_string(static_cast<dataplane::DropReason>(r))}},
                     q.port.drops[r]);
      }
    out.push_back(std::move(f));
  }

  per_queue(out, uplinks, "xdpvhost_uplink_xsk_rx_dropped_total",
            "XDP_STATISTICS rx_dropped: frames the kernel dropped for the AF_XDP socket (no room, "
            "too large).",
            &Q::rx_dropped);
  per_queue(out, uplinks, "xdpvhost_uplink_xsk_rx_invalid_descs_total",
            "XDP_STATISTICS rx_invalid_descs: invalid descriptors on the fill ring.",
            &Q::rx_invalid_descs);
  per_queue(out, uplinks, "xdpvhost_uplink_xsk_tx_invalid_descs_total",
            "XDP_STATISTICS tx_invalid_descs: invalid descriptors on the TX ring.",
            &Q::tx_invalid_descs);
  per_queue(out, uplinks, "xdpvhost_uplink_xsk_rx_ring_full_total",
            "XDP_STATISTICS rx_ring_full: frames dropped because the RX ring was full.",
            &Q::rx_ring_full);
  per_queue(out, uplinks, "xdpvhost_uplink_xsk_rx_fill_ring_empty_descs_total",
            "XDP_STATISTICS rx_fill_ring_empty_descs: times the fill ring was empty.",
            &Q::rx_fill_ring_empty_descs);
  per_queue(out, uplinks, "xdpvhost_uplink_xsk_tx_ring_empty_descs_total",
            "XDP_STATISTICS tx_ring_empty_descs: times the kernel found the TX ring empty.",
            &Q::tx_ring_empty_descs);
  per_queue(out, uplinks, "xdpvhost_uplink_flood_drops_total",
            "Broadcast and multicast frames the uplink's flood path dropped.", &Q::flood_dropped);

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
