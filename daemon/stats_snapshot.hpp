#pragma once
// Plain copies of the datapath's counters at one moment. stats.reset keeps a
// snapshot as the baseline that stats.get subtracts; the counters themselves
// (and so the Prometheus metrics) never go backwards.

#include <array>
#include <cstdint>

#include <vector>

#include "dataplane/counters.hpp"
#include "dataplane/uplink_controller.hpp"
#include "dataplane/uplink_queue_port.hpp"

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

// One uplink queue: the port's counters plus the socket's XDP_STATISTICS.
struct UplinkQueueStatsSnapshot {
  std::uint32_t queue = 0;
  PortStatsSnapshot port;
  std::uint64_t rx_dropped = 0, rx_invalid_descs = 0, tx_invalid_descs = 0, rx_ring_full = 0,
                rx_fill_ring_empty_descs = 0, tx_ring_empty_descs = 0, flood_dropped = 0;

  static UplinkQueueStatsSnapshot of(const dataplane::UplinkQueuePort& p) {
    UplinkQueueStatsSnapshot s;
    s.queue = p.queue();
    s.port = PortStatsSnapshot::of(p.counters());
    const auto& st = p.status();
    s.rx_dropped = st.rx_dropped.get();
    s.rx_invalid_descs = st.rx_invalid_descs.get();
    s.tx_invalid_descs = st.tx_invalid_descs.get();
    s.rx_ring_full = st.rx_ring_full.get();
    s.rx_fill_ring_empty_descs = st.rx_fill_ring_empty_descs.get();
    s.tx_ring_empty_descs = st.tx_ring_empty_descs.get();
    s.flood_dropped = st.flood_dropped.get();
    return s;
  }
  UplinkQueueStatsSnapshot since(const UplinkQueueStatsSnapshot& b) const {
    UplinkQueueStatsSnapshot d = *this;
    d.port = port.since(b.port);
    d.rx_dropped -= b.rx_dropped;
    d.rx_invalid_descs -= b.rx_invalid_descs;
    d.tx_invalid_descs -= b.tx_invalid_descs;
    d.rx_ring_full -= b.rx_ring_full;
    d.rx_fill_ring_empty_descs -= b.rx_fill_ring_empty_descs;
    d.tx_ring_empty_descs -= b.tx_ring_empty_descs;
    d.flood_dropped -= b.flood_dropped;
    return d;
  }
};

// An uplink: its queues and its XDP program's drops.
struct UplinkStatsSnapshot {
  std::vector<UplinkQueueStatsSnapshot> queues;
  std::uint64_t xdp_oversize = 0;

  static UplinkStatsSnapshot of(const dataplane::UplinkController& u) {
    UplinkStatsSnapshot s;
    for (const auto& p : u.ports()) s.queues.push_back(UplinkQueueStatsSnapshot::of(*p));
    const auto x = u.program_stats();
    s.xdp_oversize = x.oversize_dropped;
    return s;
  }
  UplinkStatsSnapshot since(const UplinkStatsSnapshot& b) const {
    UplinkStatsSnapshot d = *this;
    for (std::size_t i = 0; i < d.queues.size() && i < b.queues.size(); ++i)
      d.queues[i] = queues[i].since(b.queues[i]);
    d.xdp_oversize -= b.xdp_oversize;
    return d;
  }
};

}  // namespace xdpvhost::daemon
