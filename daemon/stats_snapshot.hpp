#pragma once
// Plain copies of the datapath's counters at one moment. stats.reset keeps a
// snapshot as the baseline that stats.get subtracts; the counters themselves
// (and so the Prometheus metrics) never go backwards.

#include <array>
#include <cstdint>

#include "dataplane/counters.hpp"

namespace xdpvhost::daemon {

struct PortStatsSnapshot {
  std::uint64_t rx_packets = 0, rx_bytes = 0, tx_packets = 0, tx_bytes = 0;
  std::uint64_t kicks = 0, interrupts = 0, interrupts_suppressed = 0, queue_errors = 0;
  std::array<std::uint64_t, static_cast<std::size_t>(dataplane::DropReason::kCount)> drops{};

  static PortStatsSnapshot of(const dataplane::PortCounters& c) {
    PortStatsSnapshot s;
    s.rx_packets = c.rx_packets.get();
    s.rx_bytes = c.rx_bytes.get();
    s.tx_packets = c.tx_packets.get();
    s.tx_bytes = c.tx_bytes.get();
    s.kicks = c.kicks.get();
    s.interrupts = c.interrupts.get();
    s.interrupts_suppressed = c.interrupts_suppressed.get();
    s.queue_errors = c.queue_errors.get();
    for (std::size_t i = 0; i < s.drops.size(); ++i) s.drops[i] = c.drops[i].get();
    return s;
  }
  PortStatsSnapshot since(const PortStatsSnapshot& base) const {
    PortStatsSnapshot d;
    d.rx_packets = rx_packets - base.rx_packets;
    d.rx_bytes = rx_bytes - base.rx_bytes;
    d.tx_packets = tx_packets - base.tx_packets;
    d.tx_bytes = tx_bytes - base.tx_bytes;
    d.kicks = kicks - base.kicks;
    d.interrupts = interrupts - base.interrupts;
    d.interrupts_suppressed = interrupts_suppressed - base.interrupts_suppressed;
    d.queue_errors = queue_errors - base.queue_errors;
    for (std::size_t i = 0; i < drops.size(); ++i) d.drops[i] = drops[i] - base.drops[i];
    return d;
  }
};

struct ThreadStatsSnapshot {
  std::uint64_t busy_iterations = 0, empty_iterations = 0, sleeps = 0, wakeups = 0;
  std::array<std::uint64_t, dataplane::BurstHistogram::kBuckets> bursts{};

  static ThreadStatsSnapshot of(const dataplane::ThreadCounters& c) {
    ThreadStatsSnapshot s;
    s.busy_iterations = c.busy_iterations.get();
    s.empty_iterations = c.empty_iterations.get();
    s.sleeps = c.sleeps.get();
    s.wakeups = c.wakeups.get();
    for (std::size_t i = 0; i < s.bursts.size(); ++i) s.bursts[i] = c.bursts.buckets[i].get();
    return s;
  }
  ThreadStatsSnapshot since(const ThreadStatsSnapshot& base) const {
    ThreadStatsSnapshot d;
    d.busy_iterations = busy_iterations - base.busy_iterations;
    d.empty_iterations = empty_iterations - base.empty_iterations;
    d.sleeps = sleeps - base.sleeps;
    d.wakeups = wakeups - base.wakeups;
    for (std::size_t i = 0; i < bursts.size(); ++i) d.bursts[i] = bursts[i] - base.bursts[i];
    return d;
  }
};

}  // namespace xdpvhost::daemon
