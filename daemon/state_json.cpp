#include "state_json.hpp"

#include <fmt/format.h>

#include <array>

#include "dataplane/drop_reason.hpp"
#include "vhost/socket_endpoint.hpp"

namespace xdpvhost::daemon {

using dataplane::GuestPort;
using nlohmann::json;

std::string port_state(const dataplane::GuestPortController& c) {
  if (c.port().broken()) return "broken";
  if (c.endpoint().state() != vhost::SocketEndpoint::State::kConnected) return "waiting";
  for (std::uint32_t i = 0; i < c.device().vring_count(); ++i)
    if (c.device().vrings()[i].running) return "running";
  return "connected";
}

json port_summary(const PortConfig& config, const dataplane::GuestPortController& c) {
  json j{{"name", config.name},
         {"socket", config.socket},
         {"mode", std::string(to_string(config.mode))},
         {"mac", format_mac(config.mac)},
         {"queue_pairs", config.queues},
         {"mtu", config.mtu},
         {"thread", c.thread()},
         {"state", port_state(c)}};
  if (config.uplink) j["uplink"] = *config.uplink;
  return j;
}

json port_detail(const PortConfig& config, const Tunables& effective,
                 const dataplane::GuestPortController& c) {
  json j = port_summary(config, c);
  json queues = json::array();
  const auto& vrings = c.device().vrings();
  for (std::uint32_t i = 0; i < c.device().vring_count(); ++i) {
    const auto& v = vrings[i];
    const bool touched = v.num != 0 || v.addr_set || v.kick_received || v.enabled || v.running;
    const bool broken = c.port().queue_state(i) == GuestPort::QueueState::kBroken;
    if (!touched && !broken) continue;
    json q{{"index", i}, {"direction", (i & 1) ? "tx" : "rx"}, {"size", v.num}};
    if (broken) {
      q["state"] = "broken";
      q["error"] = virtio::to_string(c.port().queue_error(i));
    } else if (v.running) {
      q["state"] = "enabled";
    } else if (v.num != 0 && v.addr_set && v.kick_received) {
      q["state"] = "disabled";
    } else {
      q["state"] = "stopped";
    }
    queues.push_back(std::move(q));
  }
  j["queues"] = std::move(queues);
  j["features"] = fmt::format("0x{:x}", c.device().acked_features());
  j["protocol_features"] = fmt::format("0x{:x}", c.device().acked_protocol_features());
  j["tunables"] = json{{"signal_batch", effective.signal_batch},
                       {"rx_burst", effective.rx_burst},
                       {"tx_burst", effective.tx_burst}};
  return j;
}

json thread_status(const dataplane::ServiceThread& t, const std::vector<std::string>& ports,
                   const std::vector<std::string>& uplinks) {
  using S = dataplane::ServiceThread::State;
  const char* state = "busy";
  switch (t.state()) {
    case S::kPolling:
      state = "polling";
      break;
    case S::kSleeping:
    case S::kStopped:
      state = "sleeping";
      break;
    case S::kStarting:
    case S::kBusy:
      state = "busy";
      break;
  }
  return json{{"index", t.index()},
              {"cpu", t.cpu() ? json(*t.cpu()) : json(nullptr)},
              {"ports", ports},
              {"uplinks", uplinks},
              {"busy_poll_us", t.busy_poll_us()},
              {"state", state}};
}

json port_stats(const PortStatsSnapshot& s) {
  json drops = json::object();
  for (std::size_t i = 0; i < s.drops.size(); ++i)
    drops[dataplane::to_string(static_cast<dataplane::DropReason>(i))] = s.drops[i];
  return json{{"rx_packets", s.rx_packets},
              {"rx_bytes", s.rx_bytes},
              {"tx_packets", s.tx_packets},
              {"tx_bytes", s.tx_bytes},
              {"kicks", s.kicks},
              {"interrupts", s.interrupts},
              {"interrupts_suppressed", s.interrupts_suppressed},
              {"drops", drops}};
}

json thread_stats(std::uint16_t index, const ThreadStatsSnapshot& s) {
  json hist = json::object();
  for (std::size_t i = 0; i < s.bursts.size(); ++i) {
    const bool last = i + 1 == s.bursts.size();
    hist[last ? std::string("+Inf") : std::to_string(dataplane::BurstHistogram::upper_bound(i))] =
        s.bursts[i];
  }
  return json{{"index", index},
              {"busy_iterations", s.busy_iterations},
              {"empty_iterations", s.empty_iterations},
              {"sleeps", s.sleeps},
              {"wakeups", s.wakeups},
              {"burst_histogram", hist}};
}

json tunables_json(const Tunables& t) {
  return to_json(t);
}

json uplink_status(const UplinkConfig& config, const dataplane::UplinkController& u) {
  json queues = json::array();
  for (const auto& q : u.queue_reports())
    queues.push_back(json{{"queue", q.queue},
                          {"bind_mode", q.bind_mode},
                          {"napi_id", q.napi_id},
                          {"thread", q.thread},
                          {"napi_busy_poll", json{{"requested", q.napi_requested},
                                                  {"active", q.napi_active},
                                                  {"reason", q.napi_reason}}}});
  return json{{"name", config.name},
              {"interface", config.interface},
              {"bind", std::string(to_string(config.bind))},
              {"frame_size", config.frame_size},
              {"ring_size", config.ring_size},
              {"link", dataplane::to_string(u.link())},
              {"queues", queues},
              {"xdp_program", u.program_report()},
              {"unicast_filter", u.filter_report()}};
}

json uplink_stats(const UplinkStatsSnapshot& s) {
  json total{{"rx_packets", 0u},         {"rx_bytes", 0u},     {"tx_packets", 0u},
             {"tx_bytes", 0u},           {"rx_dropped", 0u},   {"rx_invalid_descs", 0u},
             {"tx_invalid_descs", 0u},   {"rx_ring_full", 0u}, {"rx_fill_ring_empty_descs", 0u},
             {"tx_ring_empty_descs", 0u}};
  std::array<std::uint64_t, static_cast<std::size_t>(dataplane::DropReason::kCount)> drops{};
  std::uint64_t flood_dropped = 0;
  json queues = json::array();
  for (const auto& q : s.queues) {
    json j{{"queue", q.queue},
           {"rx_packets", q.port.rx_packets},
           {"rx_bytes", q.port.rx_bytes},
           {"tx_packets", q.port.tx_packets},
           {"tx_bytes", q.port.tx_bytes},
           {"rx_dropped", q.rx_dropped},
           {"rx_invalid_descs", q.rx_invalid_descs},
           {"tx_invalid_descs", q.tx_invalid_descs},
           {"rx_ring_full", q.rx_ring_full},
           {"rx_fill_ring_empty_descs", q.rx_fill_ring_empty_descs},
           {"tx_ring_empty_descs", q.tx_ring_empty_descs}};
    for (auto it = total.begin(); it != total.end(); ++it)
      it.value() = it.value().get<std::uint64_t>() + j[it.key()].get<std::uint64_t>();
    for (std::size_t i = 0; i < drops.size(); ++i) drops[i] += q.port.drops[i];
    flood_dropped += q.flood_dropped;
    queues.push_back(std::move(j));
  }
  json d = json::object();
  for (std::size_t i = 0; i < drops.size(); ++i)
    d[dataplane::to_string(static_cast<dataplane::DropReason>(i))] = drops[i];
  // Dropped before a frame reached us: in the XDP program (runts and frames it
  // cannot redirect are passed to the kernel, not dropped), in the packet socket.
  d["xdp_oversize"] = s.xdp_oversize;
  d["flood_socket_full"] = flood_dropped;
  total["drops"] = d;
  total["queues"] = queues;
  return total;
}

}  // namespace xdpvhost::daemon
