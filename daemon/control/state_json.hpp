#pragma once
// JSON views of the running daemon, in the shapes proto/types.schema.json
// defines: port summaries and details, thread status, counters.

#include <nlohmann/json.hpp>
#include <string>

#include "config/config.hpp"
#include "controller/guest_port_controller.hpp"
#include "controller/rebalancer.hpp"
#include "dataplane/service_thread.hpp"
#include "controller/uplink_controller.hpp"
#include "runtime/config_source.hpp"
#include "control/stats_snapshot.hpp"
#include "sys/resource_ledger.hpp"

namespace xdpvhost::daemon {

// waiting | connected | running | broken
std::string port_state(const controller::GuestPortController& port);

nlohmann::json port_summary(const PortConfig& config, const controller::GuestPortController& port);
nlohmann::json port_detail(const PortConfig& config, const Tunables& effective,
                           const controller::GuestPortController& port);
nlohmann::json thread_status(const dataplane::ServiceThread& thread,
                             const std::vector<std::string>& ports,
                             const std::vector<std::string>& uplinks);
nlohmann::json port_stats(const PortStatsSnapshot& s);
nlohmann::json thread_stats(std::uint16_t index, const ThreadStatsSnapshot& s);
nlohmann::json tunables_json(const Tunables& t);
nlohmann::json uplink_status(const UplinkConfig& config,
                             const controller::UplinkController& uplink);
nlohmann::json uplink_stats(const UplinkStatsSnapshot& s);
// What the process holds (status.resources).
nlohmann::json resources_json(const sys::ResourceLedger& ledger);
// What the rebalancer saw and did (status.rebalance).
nlohmann::json rebalance_json(const Tunables& t, const controller::Rebalancer& r);
// Where the config came from and how its reloads went (status.config).
nlohmann::json config_source_json(const ConfigSource& source);

}  // namespace xdpvhost::daemon
