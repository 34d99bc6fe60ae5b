#include "control/state_json.hpp"

#include <bpf/libbpf.h>
#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cmath>

#include "dataplane/drop_reason.hpp"
#include "vhost/socket_endpoint.hpp"

namespace xdpvhost::daemon {

using dataplane::GuestPort;
using nlohmann::json;

std::string port_state(const controller::GuestPortController& c) {
  // Broken too while the guest's memory was refused and no earlier table is
  // mapped: its rings cannot run at all (a refused later table leaves them
  // on the one before; port.get's memory_refused says so either way).
  const bool no_memory = !c.device().memory_refusal().empty() && !c.device().has_memory();
  if (c.broken() || c.stalled() || no_memory) return "broken";
  if (c.endpoint().state() != vhost::SocketEndpoint::State::kConnected) return "waiting";
  for (std::uint32_t i = 0; i < c.device().vring_count(); ++i)
    if (c.device().vrings()[i].running) return "running";
  return "connected";
}

json port_summary(const PortConfig& config, const controller::GuestPortController& c) {
  json j{{"name", config.name},
         {"socket", config.socket},
         {"mode", vhost::to_string(config.mode)},
         {"mac_policy", dataplane::to_string(config.mac_policy)},
         {"mac_source", controller::to_string(c.mac_source())},
         {"queue_pairs", config.queue_pairs},
         {"mtu", config.mtu},
         {"thread", c.thread()},
         {"state", port_state(c)}};
  if (c.mac()) j["mac"] = c.mac()->to_string();
  if (config.owner) j["owner"] = to_json(*config.owner);
  if (config.uplink) j["uplink"] = *config.uplink;
  return j;
}

json port_detail(const PortConfig& config, const Tunables& effective,
                 const controller::GuestPortController& c) {
  json j = port_summary(config, c);
  json queues = json::array();
  const auto& vrings = c.device().vrings();
  for (std::uint32_t i = 0; i < c.device().vring_count(); ++i) {
    const auto& v = vrings[i];
    const bool touched = v.num != 0 || v.addr_set || v.kick_received || v.enabled || v.running;
    const bool broken = c.queue_state(i) == GuestPort::QueueState::kBroken;
    if (!touched && !broken) continue;
    json q{{"index", i}, {"direction", (i & 1) ? "tx" : "rx"}, {"size", v.num}};
    if (broken) {
      q["state"] = "broken";
      q["error"] = virtio::to_string(c.queue_error(i));
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
  if (!c.device().memory_refusal().empty()) j["memory_refused"] = c.device().memory_refusal();
  j["features"] = fmt::format("0x{:x}", c.device().acked_features());
  j["protocol_features"] = fmt::format("0x{:x}", c.device().acked_protocol_features());
  j["tunables"] = json{{"signal_batch", effective.signal_batch},
                       {"rx_burst", effective.rx_burst},
                       {"tx_burst", effective.tx_burst},
                       {"flood_rate", effective.flood_rate}};
  const auto& session = c.endpoint().counters();
  j["frontend"] = json{{"connections", session.connections},
                       {"messages", session.messages},
                       {"failed_messages", session.failed_messages},
                       {"throttled", session.throttled},
                       {"failed_sessions", session.failed_sessions}};
  if (!c.endpoint().last_disconnect().empty())
    j["frontend"]["last_disconnect"] = c.endpoint().last_disconnect();
  if (config.mode == vhost::SocketMode::kClient)
    j["frontend"]["reconnect_delay_ms"] = c.endpoint().reconnect_delay().count();
  if (const auto& refusal = c.last_mac_refusal())
    j["mac_refusal"] = json{{"mac", refusal->mac.to_string()},
                            {"reason", dataplane::to_string(refusal->reason)},
                            {"detail", refusal->why}};
  return j;
}

json thread_status(const dataplane::ServiceThread& t, const std::vector<std::string>& ports,
                   const std::vector<std::string>& uplinks) {
  return json{{"index", t.index()},
              {"cpu", t.cpu() ? json(*t.cpu()) : json(nullptr)},
              {"ports", ports},
              {"uplinks", uplinks},
              {"busy_poll_us", t.busy_poll_us()},
              {"state", t.reported_state()},
              {"heartbeat", json{{"misses", t.heartbeat().misses()},
                                 {"silence_ms", t.heartbeat().silence().count()},
                                 {"longest_silence_ms", t.heartbeat().longest_silence().count()}}}};
}

namespace {

// Every counter of `table` in scope, under its JSON name.
template <class Set, std::size_t N>
void put_counters(json& j, const std::array<dataplane::CounterField<Set>, N>& table,
                  const dataplane::CounterValues<N>& values,
                  dataplane::PortScope scope = dataplane::PortScope::kGuest) {
  for (std::size_t i = 0; i < N; ++i)
    if (table[i].scope == dataplane::PortScope::kAll || scope == dataplane::PortScope::kGuest)
      j[std::string(table[i].info.name)] = values[i];
}

json drops_json(const dataplane::CounterValues<dataplane::kDropReasons>& drops) {
  json d = json::object();
  for (std::size_t i = 0; i < drops.size(); ++i)
    d[dataplane::to_string(static_cast<dataplane::DropReason>(i))] = drops[i];
  return d;
}

// The port counters that apply to an uplink queue, and the queue's own.
json uplink_queue_counters(const UplinkQueueStatsSnapshot& q) {
  json j = json::object();
  put_counters(j, dataplane::kPortCounters, q.port.counters, dataplane::PortScope::kAll);
  put_counters(j, dataplane::kUplinkQueueCounters, q.counters);
  return j;
}

}  // namespace

json port_stats(const PortStatsSnapshot& s) {
  json j = json::object();
  put_counters(j, dataplane::kPortCounters, s.counters);
  j[std::string(dataplane::kPortDrops.name)] = drops_json(s.drops);
  json refused = json::object();
  for (std::size_t i = 0; i < s.offload_refused.size(); ++i)
    if (static_cast<net::OffloadError>(i) != net::OffloadError::none)
      refused[net::counter_name(static_cast<net::OffloadError>(i))] = s.offload_refused[i];
  j[std::string(dataplane::kOffloadRefused.name)] = std::move(refused);
  json mac_refused = json::object();
  for (std::size_t i = 0; i < s.mac_refused.size(); ++i)
    mac_refused[dataplane::to_string(static_cast<dataplane::MacRefusal>(i))] = s.mac_refused[i];
  j[std::string(dataplane::kMacRefused.name)] = std::move(mac_refused);
  json pairs = json::array();
  for (const auto& p : s.pairs) {
    json q{{"pair", p.pair}, {"thread", p.thread}};
    put_counters(q, dataplane::kQueuePairCounters, p.counters);
    pairs.push_back(std::move(q));
  }
  j[std::string(dataplane::kQueuePairs.name)] = std::move(pairs);
  return j;
}

json thread_stats(std::uint16_t index, const ThreadStatsSnapshot& s) {
  json hist = json::object();
  for (std::size_t i = 0; i < s.bursts.size(); ++i) {
    const bool last = i + 1 == s.bursts.size();
    hist[last ? std::string("+Inf") : std::to_string(dataplane::BurstHistogram::upper_bound(i))] =
        s.bursts[i];
  }
  json j{{"index", index}};
  put_counters(j, dataplane::kThreadCounters, s.counters);
  j["burst_histogram"] = std::move(hist);
  return j;
}

json tunables_json(const Tunables& t) {
  return to_json(t);
}

json uplink_status(const UplinkConfig& config, const controller::UplinkController& u) {
  json queues = json::array();
  for (const auto& q : u.queue_reports())
    queues.push_back(json{{"queue", q.queue},
                          {"bind_mode", q.bind_mode},
                          {"multi_buffer", q.multi_buffer},
                          {"tx_checksum", q.tx_checksum},
                          {"napi_id", q.napi_id},
                          {"thread", q.thread},
                          {"napi_busy_poll", json{{"requested", q.napi_requested},
                                                  {"active", q.napi_active},
                                                  {"reason", q.napi_reason}}}});
  return json{{"name", config.name},
              {"interface", config.interface},
              {"bind", xsk::to_string(config.bind)},
              {"frame_size", config.frame_size},
              {"ring_size", config.ring_size},
              {"l2_domain", config.domain()},
              {"link", controller::to_string(u.link())},
              {"queues", queues},
              {"nic_rx_queues", u.nic_rx_queues()},
              {"xdp_program", u.program_report()},
              {"unicast_filter", u.filter_report()}};
}

json uplink_stats(const UplinkStatsSnapshot& s) {
  // The uplink's totals are the sums of its queues' counters.
  UplinkQueueStatsSnapshot sum;
  json queues = json::array();
  for (const auto& q : s.queues) {
    for (std::size_t i = 0; i < sum.port.counters.size(); ++i)
      sum.port.counters[i] += q.port.counters[i];
    for (std::size_t i = 0; i < sum.port.drops.size(); ++i) sum.port.drops[i] += q.port.drops[i];
    for (std::size_t i = 0; i < sum.counters.size(); ++i) sum.counters[i] += q.counters[i];
    json j{{"queue", q.queue}};
    j.update(uplink_queue_counters(q));
    queues.push_back(std::move(j));
  }
  json total = uplink_queue_counters(sum);
  json drops = drops_json(sum.port.drops);
  // Dropped before a frame reached a queue: in the XDP program (runts and
  // frames it cannot redirect are passed to the kernel, not dropped), in the
  // packet socket.
  drops["xdp_oversize"] = s.xdp_oversize;
  drops["flood_socket_full"] = sum.counters[dataplane::counter_index(
      dataplane::kUplinkQueueCounters, &dataplane::UplinkQueueCounters::flood_dropped)];
  total["drops"] = std::move(drops);
  total["queues"] = std::move(queues);
  return total;
}

namespace {

json bpf_objects(const std::vector<sys::BpfObject>& objects,
                 const char* (*type_name)(std::uint32_t)) {
  json list = json::array();
  for (const auto& o : objects) {
    const char* name = type_name(o.type);
    list.push_back(json{{"id", o.id},
                        {"type", name != nullptr ? name : std::to_string(o.type)},
                        {"memlock_bytes", o.memlock}});
  }
  return list;
}

const char* prog_type_name(std::uint32_t type) {
  return libbpf_bpf_prog_type_str(static_cast<bpf_prog_type>(type));
}
const char* map_type_name(std::uint32_t type) {
  return libbpf_bpf_map_type_str(static_cast<bpf_map_type>(type));
}

}  // namespace

json resources_json(const sys::ResourceLedger& l) {
  json fds = json::object();
  for (std::size_t k = 0; k < sys::kFdKinds; ++k)
    fds[sys::to_string(static_cast<sys::FdKind>(k))] = l.fds[k];
  fds["total"] = l.fds_total();
  fds["limit"] = l.fd_limit;
  json mapped = json::object();
  for (std::size_t k = 0; k < sys::kMappingKinds; ++k)
    mapped[sys::to_string(static_cast<sys::MappingKind>(k))] =
        json{{"bytes", l.mapped.bytes[k]}, {"count", l.mapped.count[k]}};
  return json{{"fds", std::move(fds)},
              {"mapped", std::move(mapped)},
              {"threads", l.threads},
              {"rss_bytes", l.rss_bytes},
              {"heap", json{{"in_use_bytes", l.heap.in_use}, {"free_bytes", l.heap.free}}},
              {"bpf_programs", bpf_objects(l.bpf_programs, prog_type_name)},
              {"bpf_maps", bpf_objects(l.bpf_maps, map_type_name)}};
}

json rebalance_json(const Tunables& t, const controller::Rebalancer& r) {
  json moves = json::object();
  for (const auto& [outcome, name] : dataplane::kMoveOutcomeNames) moves[name] = r.moves(outcome);
  json loads = json::array();
  for (double load : r.thread_loads()) loads.push_back(std::lround(load * 100));
  json last = nullptr;
  if (const auto& m = r.last_move())
    last = json{
        {"queue", m->queue},
        {"from", m->from},
        {"to", m->to},
        {"outcome", dataplane::to_string(m->outcome)},
        {"busiest_pct", std::lround(m->busiest_before * 100)},
        {"expected_pct", std::lround(m->busiest_after * 100)},
        {"ago_s", std::chrono::duration<double>(std::chrono::steady_clock::now() - m->at).count()}};
  return json{{"mode", dataplane::to_string(t.rebalance)},
              {"interval_s", t.rebalance_interval_s},
              {"looks", r.looks()},
              {"thread_load_pct", loads},
              {"moves", moves},
              {"last_move", last}};
}

json config_source_json(const ConfigSource& s) {
  return json{{"path", s.path},
              {"following", s.following},
              {"reloads", s.reloads},
              {"last_error", s.last_error.empty() ? json(nullptr) : json(s.last_error)},
              {"problems", s.problems},
              {"restart_needed", s.restart_needed}};
}

}  // namespace xdpvhost::daemon
