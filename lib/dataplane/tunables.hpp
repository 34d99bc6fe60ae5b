#pragma once
// Run-time tunables of the datapath, and the one place their defaults are
// written (proto/config.schema.json repeats them for readers; a unit test
// checks that the two agree). The control side changes them by posting a
// command to each service thread; the thread reads its own copy. The
// rebalance_* ones are the control thread's (controller/rebalancer.hpp).

#include <cstdint>
#include <optional>

#include "sys/enum_names.hpp"

namespace xdpvhost::dataplane {

// Whether queues move between service threads by measured load.
enum class RebalanceMode : std::uint8_t { kAuto, kOff, kCount };
inline constexpr sys::EnumNames<RebalanceMode, 2> kRebalanceModeNames{{
    {RebalanceMode::kAuto, "auto"},
    {RebalanceMode::kOff, "off"},
}};
static_assert(sys::in_enum_order(kRebalanceModeNames,
                                 static_cast<std::size_t>(RebalanceMode::kCount)));
constexpr const char* to_string(RebalanceMode m) {
  return sys::name_of(kRebalanceModeNames, m);
}

struct Tunables {
  // The techniques behind them: docs/techniques.md.
  std::uint32_t busy_poll_us = 50;  // keep polling this long after the last work (busy polling)
  std::uint32_t signal_batch = 32;  // used entries published per interrupt decision (batching)
  std::uint32_t rx_burst = 64;      // frames taken from an uplink RX ring per round
  std::uint32_t tx_burst = 64;      // packets taken from a guest TX queue per round (GSO: segments)
  std::uint32_t tx_inflight_max = 1024;  // frames between AF_XDP TX and completion (a bound)
  bool napi_busy_poll = false;           // drive the NIC's NAPI from the service thread
  std::uint32_t busy_poll_budget = 64;   // SO_BUSY_POLL_BUDGET
  std::uint32_t flood_rate = 10000;  // broadcast/multicast frames per second a guest sends; 0: any
  // Placement by measured load: every rebalance_interval_s, when the busiest
  // service thread was busy more than rebalance_threshold_pct of that time,
  // move the one queue that lowers the busiest thread's load the most, if
  // by rebalance_margin_pct of it or more. off: queues stay where they were
  // placed.
  RebalanceMode rebalance = RebalanceMode::kAuto;
  std::uint32_t rebalance_interval_s = 10;
  std::uint32_t rebalance_threshold_pct = 90;
  std::uint32_t rebalance_margin_pct = 25;
  bool operator==(const Tunables&) const = default;
};

// A port's overrides of the global tunables; an empty member means "the
// global value".
struct PortTunableOverrides {
  std::optional<std::uint32_t> signal_batch;
  std::optional<std::uint32_t> rx_burst;
  std::optional<std::uint32_t> tx_burst;
  std::optional<std::uint32_t> flood_rate;
  bool empty() const noexcept { return !signal_batch && !rx_burst && !tx_burst && !flood_rate; }
  bool operator==(const PortTunableOverrides&) const = default;
};

// An uplink's overrides of the global tunables.
struct UplinkTunableOverrides {
  std::optional<std::uint32_t> tx_inflight_max;
  std::optional<bool> napi_busy_poll;
  std::optional<std::uint32_t> busy_poll_budget;
  bool empty() const noexcept { return !tx_inflight_max && !napi_busy_poll && !busy_poll_budget; }
  bool operator==(const UplinkTunableOverrides&) const = default;
};

// The global values with the overrides applied.
constexpr Tunables resolve(const Tunables& global, const PortTunableOverrides& o) noexcept {
  Tunables t = global;
  t.signal_batch = o.signal_batch.value_or(t.signal_batch);
  t.rx_burst = o.rx_burst.value_or(t.rx_burst);
  t.tx_burst = o.tx_burst.value_or(t.tx_burst);
  t.flood_rate = o.flood_rate.value_or(t.flood_rate);
  return t;
}
constexpr Tunables resolve(const Tunables& global, const UplinkTunableOverrides& o) noexcept {
  Tunables t = global;
  t.tx_inflight_max = o.tx_inflight_max.value_or(t.tx_inflight_max);
  t.napi_busy_poll = o.napi_busy_poll.value_or(t.napi_busy_poll);
  t.busy_poll_budget = o.busy_poll_budget.value_or(t.busy_poll_budget);
  return t;
}

// What a guest port reads of the (resolved) tunables.
struct PortTunables {
  std::uint32_t signal_batch = Tunables{}.signal_batch;
  std::uint32_t rx_burst = Tunables{}.rx_burst;
  std::uint32_t tx_burst = Tunables{}.tx_burst;
  std::uint32_t flood_rate = Tunables{}.flood_rate;

  static PortTunables of(const Tunables& t) noexcept {
    return PortTunables{t.signal_batch, t.rx_burst, t.tx_burst, t.flood_rate};
  }
};

}  // namespace xdpvhost::dataplane
