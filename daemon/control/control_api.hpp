#pragma once
// The control methods of proto/methods/, implemented over the running
// Daemon: each takes schema-checked params and answers with a result in the
// documented shape or an RpcError naming the problem.

#include <map>
#include <string>
#include <utility>

#include "runtime/daemon.hpp"
#include "control/rpc_dispatcher.hpp"
#include "control/stats_snapshot.hpp"

namespace xdpvhost::daemon {

class ControlApi {
 public:
  explicit ControlApi(Daemon& daemon) : daemon_(daemon) {}
  // Registers every method on `dispatcher`.
  void register_methods(RpcDispatcher& dispatcher);

 private:
  RpcResult version(const nlohmann::json& params);
  RpcResult health(const nlohmann::json& params);
  RpcResult status(const nlohmann::json& params);
  RpcResult port_list(const nlohmann::json& params);
  RpcResult port_get(const nlohmann::json& params);
  RpcResult port_add(const nlohmann::json& params);
  RpcResult port_remove(const nlohmann::json& params);
  RpcResult uplink_list(const nlohmann::json& params);
  RpcResult uplink_add(const nlohmann::json& params);
  RpcResult uplink_remove(const nlohmann::json& params);
  RpcResult tunables_get(const nlohmann::json& params);
  RpcResult tunables_set(const nlohmann::json& params);
  RpcResult stats_get(const nlohmann::json& params);
  RpcResult stats_reset(const nlohmann::json& params);
  RpcResult log_set_level(const nlohmann::json& params);
  RpcResult config_get(const nlohmann::json& params);
  RpcResult queue_move(const nlohmann::json& params);

  // not_found for a named port or uplink that does not exist (stats.get,
  // stats.reset); nothing when every one named does.
  std::optional<RpcError> missing_scope(const std::optional<std::string>& port,
                                        const std::optional<std::string>& uplink) const;
  nlohmann::json tunables_scope(const std::optional<std::string>& port,
                                const std::optional<std::string>& uplink) const;
  nlohmann::json port_detail_json(const std::string& name) const;
  PortStatsSnapshot port_stats_since_reset(const std::string& name,
                                           const controller::GuestPortController& port) const;

  Daemon& daemon_;
  // stats.reset baselines: port name -> (port id, counters at the reset).
  std::map<std::string, std::pair<std::uint32_t, PortStatsSnapshot>> port_baselines_;
  std::map<std::uint16_t, ThreadStatsSnapshot> thread_baselines_;
  // uplink name -> (its id at the reset: a re-created uplink has another,
  // counters then).
  std::map<std::string, std::pair<std::uint32_t, UplinkStatsSnapshot>> uplink_baselines_;
  nlohmann::json uplink_status_json(const std::string& name) const;
  UplinkStatsSnapshot uplink_stats_since_reset(const std::string& name,
                                               const controller::UplinkController& uplink) const;
};

// The JSON-RPC error a config error is answered with (kIo/kSyntax, which
// only file loading produces, map to kInvalidParams too).
RpcErrorCode rpc_code(ConfigErrorKind kind);
RpcError to_rpc_error(const ConfigError& error);

}  // namespace xdpvhost::daemon
