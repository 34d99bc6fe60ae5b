#pragma once
// Changes to a running daemon's configuration, as the control methods make
// them (port.add, port.remove, uplink.add, uplink.remove, tunables.set).
// Each takes the current Config and returns the changed copy, or the reason
// the change is refused with an error kind that maps onto the protocol's
// error code (ConfigError::rpc_code). The input is never modified, so a
// refused request leaves the daemon's state exactly as it was.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "config/config_result.hpp"

namespace xdpvhost::daemon {

// Every tunable as optional: what a tunables.set request changes.
struct TunablesPatch {
  std::optional<std::uint32_t> busy_poll_us;
  std::optional<std::uint32_t> signal_batch;
  std::optional<std::uint32_t> rx_burst;
  std::optional<std::uint32_t> tx_burst;
  std::optional<std::uint32_t> tx_inflight_max;
  std::optional<bool> napi_busy_poll;
  std::optional<std::uint32_t> busy_poll_budget;
  std::optional<std::uint32_t> flood_rate;
  std::optional<dataplane::RebalanceMode> rebalance;
  std::optional<std::uint32_t> rebalance_interval_s;
  std::optional<std::uint32_t> rebalance_threshold_pct;
  std::optional<std::uint32_t> rebalance_margin_pct;
  // Any of the tunables only the global scope has.
  bool global_only() const noexcept {
    return busy_poll_us || rebalance || rebalance_interval_s || rebalance_threshold_pct ||
           rebalance_margin_pct;
  }
  bool operator==(const TunablesPatch&) const = default;
};

// A tunables.set request: global when neither port nor uplink is set. The
// schema lets a port scope carry only signal_batch/rx_burst/tx_burst and an
// uplink scope only tx_inflight_max/napi_busy_poll/busy_poll_budget.
struct TunablesChange {
  std::optional<std::string> port;
  std::optional<std::string> uplink;
  TunablesPatch values;
  bool operator==(const TunablesChange&) const = default;
};

// Validates tunables.set params against methods/tunables.set.json.
ConfigResult<TunablesChange> parse_tunables_set(const nlohmann::json& params);

// Refused with kNameInUse (name taken by a port or uplink), kMacInUse,
// kSocketInUse (another port's socket or the control socket), kNotFound (the
// port's uplink does not exist), kInvalid (thread index not below
// threads.count).
ConfigResult<Config> with_port_added(const Config& config, PortConfig port);
// Refused with kNotFound.
ConfigResult<Config> with_port_removed(const Config& config, std::string_view name);
// Refused with kNameInUse, kInUse (a queue of the interface is bound by
// another uplink), kInvalid (thread index).
ConfigResult<Config> with_uplink_added(const Config& config, UplinkConfig uplink);
// Refused with kNotFound, kInUse (ports name it as their uplink).
ConfigResult<Config> with_uplink_removed(const Config& config, std::string_view name);
// Global values replace the global tunables; port/uplink values become that
// port's/uplink's overrides. Refused with kNotFound.
ConfigResult<Config> with_tunables_set(const Config& config, const TunablesChange& change);

}  // namespace xdpvhost::daemon
