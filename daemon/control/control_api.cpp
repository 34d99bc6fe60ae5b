#include "control/control_api.hpp"

#include <spdlog/spdlog.h>

#include "control/state_json.hpp"
#include "runtime/health_check.hpp"

namespace xdpvhost::daemon {

using nlohmann::json;

namespace {

constexpr int kProtocolVersion = 1;

RpcError not_found(const std::string& what) {
  return RpcError{RpcErrorCode::kNotFound, what, nullptr};
}

std::optional<std::string> opt_string(const json& params, const char* key) {
  if (params.contains(key)) return params[key].get<std::string>();
  return std::nullopt;
}

// port.add / uplink.add: the parsed object added, then its report. Rule
// violations keep their own codes; failing to open it is operation_failed
// (ConfigErrorKind::kOperationFailed).
template <class Parsed, class Add, class Report>
RpcResult add_parsed(const ConfigResult<Parsed>& parsed, Add&& add, Report&& report) {
  if (!parsed) return to_rpc_error(parsed.error());
  if (auto error = add(parsed.value())) return to_rpc_error(*error);
  return report(parsed->name);
}

// port.remove / uplink.remove: removed, and its stats.reset baseline with it.
template <class Remove, class Baselines>
RpcResult remove_named(const json& params, Remove&& remove, Baselines& baselines) {
  const std::string name = params["name"].get<std::string>();
  if (auto error = remove(name)) return to_rpc_error(*error);
  baselines.erase(name);
  return json{{"removed", name}};
}

}  // namespace

RpcErrorCode rpc_code(ConfigErrorKind kind) {
  switch (kind) {
    case ConfigErrorKind::kSocketPath:
      return RpcErrorCode::kInvalidSocketPath;
    case ConfigErrorKind::kNameInUse:
      return RpcErrorCode::kNameInUse;
    case ConfigErrorKind::kMacInUse:
      return RpcErrorCode::kMacInUse;
    case ConfigErrorKind::kSocketInUse:
      return RpcErrorCode::kSocketInUse;
    case ConfigErrorKind::kNotFound:
      return RpcErrorCode::kNotFound;
    case ConfigErrorKind::kInUse:
      return RpcErrorCode::kInUse;
    case ConfigErrorKind::kOperationFailed:
      return RpcErrorCode::kOperationFailed;
    case ConfigErrorKind::kIo:
    case ConfigErrorKind::kSyntax:
    case ConfigErrorKind::kSchema:
    case ConfigErrorKind::kInvalid:
      break;
  }
  return RpcErrorCode::kInvalidParams;
}

RpcError to_rpc_error(const ConfigError& error) {
  RpcError e{rpc_code(error.kind), error.message, nullptr};
  if (!error.details.empty()) e.data = json{{"errors", error.details}};
  return e;
}

void ControlApi::register_methods(RpcDispatcher& d) {
  auto bind = [this](RpcResult (ControlApi::*m)(const json&)) {
    return [this, m](const json& params) { return (this->*m)(params); };
  };
  d.add("version", bind(&ControlApi::version));
  d.add("health", bind(&ControlApi::health));
  d.add("status", bind(&ControlApi::status));
  d.add("port.list", bind(&ControlApi::port_list));
  d.add("port.get", bind(&ControlApi::port_get));
  d.add("port.add", bind(&ControlApi::port_add));
  d.add("port.remove", bind(&ControlApi::port_remove));
  d.add("uplink.list", bind(&ControlApi::uplink_list));
  d.add("uplink.add", bind(&ControlApi::uplink_add));
  d.add("uplink.remove", bind(&ControlApi::uplink_remove));
  d.add("tunables.get", bind(&ControlApi::tunables_get));
  d.add("tunables.set", bind(&ControlApi::tunables_set));
  d.add("stats.get", bind(&ControlApi::stats_get));
  d.add("stats.reset", bind(&ControlApi::stats_reset));
  d.add("log.set_level", bind(&ControlApi::log_set_level));
  d.add("config.get", bind(&ControlApi::config_get));
  d.add("queue.move", bind(&ControlApi::queue_move));
}

RpcResult ControlApi::queue_move(const json& params) {
  const auto thread = params["thread"].get<std::uint16_t>();
  if (thread >= daemon_.dataplane().thread_count())
    return RpcError{RpcErrorCode::kInvalidParams,
                    "params.thread: service thread " + std::to_string(thread) + " does not exist",
                    nullptr};
  std::string what;  // for the log and errors: "port vm1 pairs 1,3", "uplink up0 queue 0"
  json pairs = json::array();
  std::optional<dataplane::Dataplane::Move> move;
  if (const auto port_name = opt_string(params, "port")) {
    auto* port = daemon_.find_port(*port_name);
    if (port == nullptr) return not_found("no port named " + *port_name);
    const auto pair = params["pair"].get<std::uint32_t>();
    if (pair >= port->config().queue_pairs)
      return not_found("port " + *port_name + " has no queue pair " + std::to_string(pair));
    const std::size_t group = port->group_of_pair(pair);
    what = "port " + *port_name + " pairs";
    for (std::uint32_t p = static_cast<std::uint32_t>(group); p < port->config().queue_pairs;
         p += static_cast<std::uint32_t>(port->group_count())) {
      what += (pairs.empty() ? " " : ",") + std::to_string(p);
      pairs.push_back(p);
    }
    move = port->move_group(group, thread);
  } else {
    const std::string uplink_name = params["uplink"].get<std::string>();
    auto* uplink = daemon_.find_uplink(uplink_name);
    if (uplink == nullptr) return not_found("no uplink named " + uplink_name);
    const auto queue = params["queue"].get<std::uint32_t>();
    what = "uplink " + uplink_name + " queue " + std::to_string(queue);
    move = uplink->move_queue(queue, thread);
    if (!move)
      return not_found("uplink " + uplink_name + " has no port for queue " + std::to_string(queue));
  }
  using dataplane::MoveOutcome;
  if (move->outcome == MoveOutcome::kNotSettled || move->outcome == MoveOutcome::kThreadStalled) {
    spdlog::warn("{}: not moved from service thread {} to {} ({}, after {} us)", what, move->from,
                 thread, to_string(move->outcome), move->took.count());
    return RpcError{RpcErrorCode::kOperationFailed,
                    what + " stays on service thread " + std::to_string(move->from) + ": " +
                        (move->outcome == MoveOutcome::kNotSettled
                             ? "the frames queued for it were not taken within a second"
                             : "a service thread is stalled"),
                    nullptr};
  }
  if (move->outcome == MoveOutcome::kMoved)
    spdlog::info("{}: moved from service thread {} to {} in {} us (queue.move)", what, move->from,
                 thread, move->took.count());
  json result{{"outcome", to_string(move->outcome)},
              {"from", move->from},
              {"thread", thread},
              {"took_us", move->took.count()}};
  if (params.contains("port")) result["pairs"] = pairs;
  return result;
}

RpcResult ControlApi::version(const json&) {
  return json{{"version", daemon_.version()},
              {"protocol", kProtocolVersion},
              {"methods", SchemaRegistry::embedded().methods()}};
}

RpcResult ControlApi::health(const json&) {
  const Health health = check_health(daemon_);
  return json{{"healthy", health.ok()}, {"problems", health.problems}};
}

RpcResult ControlApi::status(const json&) {
  const auto& config = daemon_.config();
  auto& dp = daemon_.dataplane();
  json threads = json::array();
  for (std::uint16_t t = 0; t < dp.thread_count(); ++t) {
    std::vector<std::string> ports, uplinks;
    for (const auto& [name, port] : daemon_.ports())
      for (std::size_t g = 0; g < port->group_count(); ++g)
        if (port->group_thread(g) == t) {
          ports.push_back(name);  // a port with queue pairs on several threads is on each
          break;
        }
    for (const auto& [name, uplink] : daemon_.uplinks())
      for (const auto& q : uplink->queue_reports())
        if (q.thread == t && (uplinks.empty() || uplinks.back() != name)) uplinks.push_back(name);
    threads.push_back(thread_status(dp.thread(t), ports, uplinks));
  }
  json ports = json::array();
  for (const auto& p : config.ports)
    if (const auto* c = daemon_.find_port(p.name)) ports.push_back(port_summary(p, *c));
  const double uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - daemon_.started_at())
          .count();
  return json{{"version", daemon_.version()},
              {"uptime_s", uptime},
              {"threads", threads},
              {"ports", ports},
              {"uplinks", uplink_list(json::object()).result()},
              {"resources", resources_json(sys::take_resource_ledger())},
              {"rebalance", rebalance_json(config.tunables, daemon_.rebalancer())},
              {"config", config_source_json(daemon_.config_source())}};
}

RpcResult ControlApi::port_list(const json&) {
  json list = json::array();
  for (const auto& p : daemon_.config().ports)
    if (const auto* c = daemon_.find_port(p.name)) list.push_back(port_summary(p, *c));
  return list;
}

json ControlApi::port_detail_json(const std::string& name) const {
  const PortConfig* p = daemon_.config().find_port(name);
  const auto* c = daemon_.find_port(name);
  if (p == nullptr || c == nullptr) return nullptr;
  return port_detail(*p, resolve(daemon_.config().tunables, p->tunables), *c);
}

RpcResult ControlApi::port_get(const json& params) {
  const std::string name = params["name"].get<std::string>();
  json detail = port_detail_json(name);
  if (detail.is_null()) return not_found("there is no port \"" + name + "\"");
  return detail;
}

RpcResult ControlApi::port_add(const json& params) {
  return add_parsed(
      parse_port(params, "params"), [this](const PortConfig& p) { return daemon_.add_port(p); },
      [this](const std::string& name) { return port_detail_json(name); });
}

RpcResult ControlApi::port_remove(const json& params) {
  return remove_named(
      params, [this](const std::string& name) { return daemon_.remove_port(name); },
      port_baselines_);
}

json ControlApi::uplink_status_json(const std::string& name) const {
  const UplinkConfig* u = daemon_.config().find_uplink(name);
  const auto* c = daemon_.find_uplink(name);
  if (u == nullptr || c == nullptr) return nullptr;
  return uplink_status(*u, *c);
}

RpcResult ControlApi::uplink_list(const json&) {
  json list = json::array();
  for (const auto& u : daemon_.config().uplinks) {
    json j = uplink_status_json(u.name);
    if (!j.is_null()) list.push_back(std::move(j));
  }
  return list;
}

RpcResult ControlApi::uplink_add(const json& params) {
  return add_parsed(
      parse_uplink(params, "params"),
      [this](const UplinkConfig& u) { return daemon_.add_uplink(u); },
      [this](const std::string& name) { return uplink_status_json(name); });
}

RpcResult ControlApi::uplink_remove(const json& params) {
  return remove_named(
      params, [this](const std::string& name) { return daemon_.remove_uplink(name); },
      uplink_baselines_);
}

UplinkStatsSnapshot ControlApi::uplink_stats_since_reset(
    const std::string& name, const controller::UplinkController& uplink) const {
  auto now = UplinkStatsSnapshot::of(uplink);
  auto it = uplink_baselines_.find(name);
  if (it == uplink_baselines_.end() || it->second.first != uplink.id()) return now;
  return now.since(it->second.second);
}

json ControlApi::tunables_scope(const std::optional<std::string>& port,
                                const std::optional<std::string>& uplink) const {
  const auto& config = daemon_.config();
  if (port) {
    const PortConfig* p = config.find_port(*port);
    if (p == nullptr) return nullptr;
    return json{{"scope", "port"},
                {"name", *port},
                {"tunables", to_json(resolve(config.tunables, p->tunables))},
                {"overrides", to_json(p->tunables)}};
  }
  if (uplink) {
    const UplinkConfig* u = config.find_uplink(*uplink);
    if (u == nullptr) return nullptr;
    return json{{"scope", "uplink"},
                {"name", *uplink},
                {"tunables", to_json(resolve(config.tunables, u->tunables))},
                {"overrides", to_json(u->tunables)}};
  }
  return json{{"scope", "global"}, {"tunables", to_json(config.tunables)}};
}

RpcResult ControlApi::tunables_get(const json& params) {
  auto port = opt_string(params, "port");
  auto uplink = opt_string(params, "uplink");
  json j = tunables_scope(port, uplink);
  if (j.is_null())
    return not_found(port ? "there is no port \"" + *port + "\""
                          : "there is no uplink \"" + *uplink + "\"");
  return j;
}

RpcResult ControlApi::tunables_set(const json& params) {
  auto change = parse_tunables_set(params);
  if (!change) return to_rpc_error(change.error());
  if (auto error = daemon_.set_tunables(change.value())) return to_rpc_error(*error);
  return tunables_scope(change->port, change->uplink);
}

std::optional<RpcError> ControlApi::missing_scope(const std::optional<std::string>& port,
                                                  const std::optional<std::string>& uplink) const {
  if (port && daemon_.find_port(*port) == nullptr)
    return not_found("there is no port \"" + *port + "\"");
  if (uplink && daemon_.find_uplink(*uplink) == nullptr)
    return not_found("there is no uplink \"" + *uplink + "\"");
  return std::nullopt;
}

PortStatsSnapshot ControlApi::port_stats_since_reset(
    const std::string& name, const controller::GuestPortController& port) const {
  auto now = PortStatsSnapshot::of(port);
  auto it = port_baselines_.find(name);
  if (it == port_baselines_.end() || it->second.first != port.port().id()) return now;
  return now.since(it->second.second);
}

RpcResult ControlApi::stats_get(const json& params) {
  auto only_port = opt_string(params, "port");
  auto only_uplink = opt_string(params, "uplink");
  if (auto missing = missing_scope(only_port, only_uplink)) return *missing;
  json ports = json::object();
  if (!only_uplink)
    for (const auto& [name, port] : daemon_.ports())
      if (!only_port || *only_port == name)
        ports[name] = port_stats(port_stats_since_reset(name, *port));
  json uplinks = json::object();
  if (!only_port)
    for (const auto& [name, uplink] : daemon_.uplinks())
      if (!only_uplink || *only_uplink == name)
        uplinks[name] = uplink_stats(uplink_stats_since_reset(name, *uplink));
  json threads = json::array();
  if (!only_port && !only_uplink) {
    auto& dp = daemon_.dataplane();
    for (std::uint16_t t = 0; t < dp.thread_count(); ++t) {
      auto now = ThreadStatsSnapshot::of(dp.thread(t).counters());
      auto it = thread_baselines_.find(t);
      threads.push_back(
          thread_stats(t, it == thread_baselines_.end() ? now : now.since(it->second)));
    }
  }
  return json{{"ports", ports}, {"uplinks", uplinks}, {"threads", threads}};
}

RpcResult ControlApi::stats_reset(const json& params) {
  auto only_port = opt_string(params, "port");
  auto only_uplink = opt_string(params, "uplink");
  if (auto missing = missing_scope(only_port, only_uplink)) return *missing;
  json reset_ports = json::array();
  if (!only_uplink)
    for (const auto& [name, port] : daemon_.ports()) {
      if (only_port && *only_port != name) continue;
      port_baselines_[name] = {port->port().id(), PortStatsSnapshot::of(*port)};
      reset_ports.push_back(name);
    }
  json reset_uplinks = json::array();
  if (!only_port)
    for (const auto& [name, uplink] : daemon_.uplinks()) {
      if (only_uplink && *only_uplink != name) continue;
      uplink_baselines_[name] = {uplink->id(), UplinkStatsSnapshot::of(*uplink)};
      reset_uplinks.push_back(name);
    }
  const bool threads = !only_port && !only_uplink;
  if (threads) {
    auto& dp = daemon_.dataplane();
    for (std::uint16_t t = 0; t < dp.thread_count(); ++t)
      thread_baselines_[t] = ThreadStatsSnapshot::of(dp.thread(t).counters());
  }
  return json{{"ports", reset_ports}, {"uplinks", reset_uplinks}, {"threads", threads}};
}

RpcResult ControlApi::log_set_level(const json& params) {
  const std::string level = params["level"].get<std::string>();
  auto parsed = parse_log_level(level);
  if (!parsed) return RpcError{RpcErrorCode::kInvalidParams, "unknown level " + level, nullptr};
  const std::string previous(to_string(daemon_.log_level()));
  daemon_.set_log_level(*parsed);
  return json{{"level", level}, {"previous", previous}};
}

RpcResult ControlApi::config_get(const json&) {
  return to_json(daemon_.config());
}

}  // namespace xdpvhost::daemon
