// Run-time changes to the configuration (port.add, uplink.remove, ...).

#include "config/config_change.hpp"

#include <algorithm>

#include "config/config_rules.hpp"
#include "schemas/schema_registry.hpp"

namespace xdpvhost::daemon {

using nlohmann::json;

namespace {

std::string json_quoted(std::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

ConfigError not_found(std::string_view what, std::string_view name) {
  return ConfigError{
      ConfigErrorKind::kNotFound, "there is no " + std::string(what) + " " + json_quoted(name), {}};
}

ConfigError internal_error(const std::exception& e) {
  return ConfigError{ConfigErrorKind::kInvalid, std::string("unexpected error: ") + e.what(), {}};
}

// The final guard: a change never yields a config the loader would refuse.
ConfigResult<Config> checked(Config next) {
  if (auto e = check_config(next)) return std::move(*e);
  return next;
}

}  // namespace

ConfigResult<TunablesChange> parse_tunables_set(const json& params) {
  try {
    const Schema* schema = SchemaRegistry::embedded().params("tunables.set");
    auto errors = validate(*schema, params, "params");
    if (!errors.empty()) return config_rules::schema_error(errors);
    TunablesChange c;
    if (params.contains("port")) c.port = params["port"].get<std::string>();
    if (params.contains("uplink")) c.uplink = params["uplink"].get<std::string>();
    auto u32 = [&](const char* key) -> std::optional<std::uint32_t> {
      if (!params.contains(key)) return std::nullopt;
      return params[key].get<std::uint32_t>();
    };
    c.values.busy_poll_us = u32("busy_poll_us");
    c.values.signal_batch = u32("signal_batch");
    c.values.rx_burst = u32("rx_burst");
    c.values.tx_burst = u32("tx_burst");
    c.values.tx_inflight_max = u32("tx_inflight_max");
    if (params.contains("napi_busy_poll"))
      c.values.napi_busy_poll = params["napi_busy_poll"].get<bool>();
    c.values.busy_poll_budget = u32("busy_poll_budget");
    c.values.flood_rate = u32("flood_rate");
    if (params.contains("rebalance"))
      c.values.rebalance =
          sys::value_named(dataplane::kRebalanceModeNames, params["rebalance"].get<std::string>());
    c.values.rebalance_interval_s = u32("rebalance_interval_s");
    c.values.rebalance_threshold_pct = u32("rebalance_threshold_pct");
    c.values.rebalance_margin_pct = u32("rebalance_margin_pct");
    return c;
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

ConfigResult<Config> with_port_added(const Config& config, PortConfig port) {
  try {
    if (auto e = config_rules::check_new_port(config, port, "params")) return std::move(*e);
    Config next = config;
    next.ports.push_back(std::move(port));
    return checked(std::move(next));
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

ConfigResult<Config> with_port_removed(const Config& config, std::string_view name) {
  try {
    if (!config.find_port(name)) return not_found("port", name);
    Config next = config;
    std::erase_if(next.ports, [&](const PortConfig& p) { return p.name == name; });
    return checked(std::move(next));
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

ConfigResult<Config> with_uplink_added(const Config& config, UplinkConfig uplink) {
  try {
    if (auto e = config_rules::check_new_uplink(config, uplink, "params")) return std::move(*e);
    Config next = config;
    next.uplinks.push_back(std::move(uplink));
    return checked(std::move(next));
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

ConfigResult<Config> with_uplink_removed(const Config& config, std::string_view name) {
  try {
    if (!config.find_uplink(name)) return not_found("uplink", name);
    for (const auto& p : config.ports) {
      if (p.uplink && *p.uplink == name) {
        return ConfigError{
            ConfigErrorKind::kInUse,
            "uplink " + json_quoted(name) + " is still the uplink of port " + json_quoted(p.name),
            {}};
      }
    }
    Config next = config;
    std::erase_if(next.uplinks, [&](const UplinkConfig& u) { return u.name == name; });
    return checked(std::move(next));
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

ConfigResult<Config> with_tunables_set(const Config& config, const TunablesChange& change) {
  try {
    Config next = config;
    const TunablesPatch& v = change.values;
    if (change.port && change.uplink) {
      return ConfigError{ConfigErrorKind::kInvalid, "params: give port or uplink, not both", {}};
    }
    if (change.port &&
        (v.global_only() || v.tx_inflight_max || v.napi_busy_poll || v.busy_poll_budget)) {
      return ConfigError{ConfigErrorKind::kInvalid,
                         "params: a port overrides only signal_batch, rx_burst, tx_burst and "
                         "flood_rate",
                         {}};
    }
    if (change.uplink &&
        (v.global_only() || v.signal_batch || v.rx_burst || v.tx_burst || v.flood_rate)) {
      return ConfigError{
          ConfigErrorKind::kInvalid,
          "params: an uplink overrides only tx_inflight_max, napi_busy_poll and busy_poll_budget",
          {}};
    }
    if (change.port) {
      auto it = std::find_if(next.ports.begin(), next.ports.end(),
                             [&](const PortConfig& p) { return p.name == *change.port; });
      if (it == next.ports.end()) return not_found("port", *change.port);
      if (v.signal_batch) it->tunables.signal_batch = v.signal_batch;
      if (v.rx_burst) it->tunables.rx_burst = v.rx_burst;
      if (v.tx_burst) it->tunables.tx_burst = v.tx_burst;
      if (v.flood_rate) it->tunables.flood_rate = v.flood_rate;
    } else if (change.uplink) {
      auto it = std::find_if(next.uplinks.begin(), next.uplinks.end(),
                             [&](const UplinkConfig& u) { return u.name == *change.uplink; });
      if (it == next.uplinks.end()) return not_found("uplink", *change.uplink);
      if (v.tx_inflight_max) it->tunables.tx_inflight_max = v.tx_inflight_max;
      if (v.napi_busy_poll) it->tunables.napi_busy_poll = v.napi_busy_poll;
      if (v.busy_poll_budget) it->tunables.busy_poll_budget = v.busy_poll_budget;
    } else {
      Tunables& t = next.tunables;
      t.busy_poll_us = v.busy_poll_us.value_or(t.busy_poll_us);
      t.signal_batch = v.signal_batch.value_or(t.signal_batch);
      t.rx_burst = v.rx_burst.value_or(t.rx_burst);
      t.tx_burst = v.tx_burst.value_or(t.tx_burst);
      t.tx_inflight_max = v.tx_inflight_max.value_or(t.tx_inflight_max);
      t.napi_busy_poll = v.napi_busy_poll.value_or(t.napi_busy_poll);
      t.busy_poll_budget = v.busy_poll_budget.value_or(t.busy_poll_budget);
      t.flood_rate = v.flood_rate.value_or(t.flood_rate);
      t.rebalance = v.rebalance.value_or(t.rebalance);
      t.rebalance_interval_s = v.rebalance_interval_s.value_or(t.rebalance_interval_s);
      t.rebalance_threshold_pct = v.rebalance_threshold_pct.value_or(t.rebalance_threshold_pct);
      t.rebalance_margin_pct = v.rebalance_margin_pct.value_or(t.rebalance_margin_pct);
    }
    return checked(std::move(next));
  } catch (const std::exception& e) {
    return internal_error(e);
  }
}

}  // namespace xdpvhost::daemon
