// Config -> JSON, the inverse of parse_config: the daemon's persisted state.

#include <cstdio>

#include "config/config.hpp"

namespace xdpvhost::daemon {

using nlohmann::json;

json to_json(const Tunables& t) {
  return json{{"busy_poll_us", t.busy_poll_us},
              {"signal_batch", t.signal_batch},
              {"rx_burst", t.rx_burst},
              {"tx_burst", t.tx_burst},
              {"tx_inflight_max", t.tx_inflight_max},
              {"napi_busy_poll", t.napi_busy_poll},
              {"busy_poll_budget", t.busy_poll_budget},
              {"flood_rate", t.flood_rate},
              {"rebalance", dataplane::to_string(t.rebalance)},
              {"rebalance_interval_s", t.rebalance_interval_s},
              {"rebalance_threshold_pct", t.rebalance_threshold_pct},
              {"rebalance_margin_pct", t.rebalance_margin_pct}};
}

json to_json(const dataplane::PortTunableOverrides& t) {
  json j = json::object();
  if (t.signal_batch) j["signal_batch"] = *t.signal_batch;
  if (t.rx_burst) j["rx_burst"] = *t.rx_burst;
  if (t.tx_burst) j["tx_burst"] = *t.tx_burst;
  if (t.flood_rate) j["flood_rate"] = *t.flood_rate;
  return j;
}

json to_json(const dataplane::UplinkTunableOverrides& t) {
  json j = json::object();
  if (t.tx_inflight_max) j["tx_inflight_max"] = *t.tx_inflight_max;
  if (t.napi_busy_poll) j["napi_busy_poll"] = *t.napi_busy_poll;
  if (t.busy_poll_budget) j["busy_poll_budget"] = *t.busy_poll_budget;
  return j;
}

json to_json(const PortConfig& p) {
  json j{{"name", p.name},
         {"socket", p.socket},
         {"mode", vhost::to_string(p.mode)},
         {"mac_policy", dataplane::to_string(p.mac_policy)},
         {"queues", p.queue_pairs},
         {"mtu", p.mtu}};
  if (p.mac) j["mac"] = p.mac->to_string();
  if (p.owner) j["owner"] = to_json(*p.owner);
  if (p.uplink) j["uplink"] = *p.uplink;
  if (p.thread) j["thread"] = *p.thread;
  if (!p.tunables.empty()) j["tunables"] = to_json(p.tunables);
  return j;
}

json to_json(const controller::PortOwner& o) {
  return json{{"namespace", o.ns}, {"vm", o.vm}, {"claim", o.claim}};
}

json to_json(const UplinkConfig& u) {
  json j{{"name", u.name},
         {"interface", u.interface},
         {"queues", u.queues ? json(*u.queues) : json("all")},
         {"bind", xsk::to_string(u.bind)},
         {"frame_size", u.frame_size},
         {"ring_size", u.ring_size}};
  if (u.thread) j["thread"] = *u.thread;
  if (u.l2_domain) j["l2_domain"] = *u.l2_domain;
  if (!u.tunables.empty()) j["tunables"] = to_json(u.tunables);
  return j;
}

json to_json(const RunTimeState& s) {
  json ports = json::array();
  for (const auto& p : s.ports) ports.push_back(to_json(p));
  json uplinks = json::array();
  for (const auto& u : s.uplinks) uplinks.push_back(to_json(u));
  return json{{"ports", std::move(ports)}, {"uplinks", std::move(uplinks)}};
}

json to_json(const Config& c) {
  json ports = json::array();
  for (const auto& p : c.ports) ports.push_back(to_json(p));
  json uplinks = json::array();
  for (const auto& u : c.uplinks) uplinks.push_back(to_json(u));
  json threads{{"count", c.threads.count}};
  if (!c.threads.cpus.empty()) threads["cpus"] = c.threads.cpus;
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", c.control.mode & 07777);
  json control{{"socket", c.control.socket}, {"mode", mode}};
  if (c.control.group) control["group"] = *c.control.group;
  control["idle_timeout_s"] = c.control.idle_timeout_s;
  json j{
      {"ports", std::move(ports)},
      {"uplinks", std::move(uplinks)},
      {"tunables", to_json(c.tunables)},
      {"threads", std::move(threads)},
      {"control", std::move(control)},
      {"metrics", {{"listen", c.metrics.listen}, {"zero_breakdowns", c.metrics.zero_breakdowns}}},
      {"log", {{"level", to_string(c.log.level)}, {"format", to_string(c.log.format)}}},
      {"socket_dirs", c.socket_dirs},
      {"security", {{"seccomp", c.security.seccomp}}}};
  json prefixes = json::array();
  for (const auto& p : c.mac_learning.prefixes) prefixes.push_back(p.to_string());
  j["mac_learning"] = {{"prefixes", std::move(prefixes)},
                       {"wire_source_age_s", c.mac_learning.wire_source_age_s},
                       {"relearn_per_s", c.mac_learning.requests.per_second},
                       {"relearn_burst", c.mac_learning.requests.burst}};
  if (c.state_file) j["state_file"] = *c.state_file;
  if (c.bpf_object) j["bpf_object"] = *c.bpf_object;
  return j;
}

}  // namespace xdpvhost::daemon
