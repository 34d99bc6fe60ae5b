#pragma once
// Plain copies of the datapath's counters at one moment, read through the
// counter tables (dataplane/counters.hpp). stats.reset keeps a snapshot as
// the baseline that stats.get subtracts; the counters themselves (and so the
// Prometheus metrics) never go backwards.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "controller/guest_port_controller.hpp"
#include "controller/uplink_controller.hpp"
#include "dataplane/counters.hpp"
#include "dataplane/uplink_queue_port.hpp"

namespace xdpvhost::daemon {

template <std::size_t N>
void add_to(dataplane::CounterValues<N>& sum, const dataplane::CounterValues<N>& v) {
  for (std::size_t i = 0; i < N; ++i) sum[i] += v[i];
}

template <std::size_t N>
dataplane::CounterValues<N> minus(const dataplane::CounterValues<N>& a,
                                  const dataplane::CounterValues<N>& b) {
  dataplane::CounterValues<N> d{};
  for (std::size_t i = 0; i < N; ++i) d[i] = a[i] - b[i];
  return d;
}

// One queue pair of a guest port, and the service thread that polls it.
struct QueuePairStatsSnapshot {
  std::uint32_t pair = 0;
  std::uint16_t thread = 0;
  dataplane::CounterValues<dataplane::kQueuePairCounters.size()> counters{};
};

struct PortStatsSnapshot {
  dataplane::CounterValues<dataplane::kPortCounters.size()> counters{};
  dataplane::CounterValues<dataplane::kDropReasons> drops{};
  dataplane::CounterValues<net::kOffloadErrorCount> offload_refused{};
  dataplane::CounterValues<dataplane::kMacRefusals> mac_refused{};
  std::vector<QueuePairStatsSnapshot> pairs;  // guest ports: one per configured pair

  // A guest port: the sums over its queue groups, and each pair from the
  // group that polls it.
  static PortStatsSnapshot of(const controller::GuestPortController& c) {
    PortStatsSnapshot s;
    for (std::size_t g = 0; g < c.group_count(); ++g) {
      const PortStatsSnapshot group = of(c.group(g).counters());
      add_to(s.counters, group.counters);
      add_to(s.drops, group.drops);
      add_to(s.offload_refused, group.offload_refused);
      add_to(s.mac_refused, group.mac_refused);
    }
    const std::uint32_t pairs =
        std::min(c.config().queue_pairs, dataplane::GuestPort::kMaxQueuePairs);
    for (std::uint32_t p = 0; p < pairs; ++p) {
      const std::size_t g = c.group_of_pair(p);
      s.pairs.push_back(
          {p, c.group_thread(g),
           dataplane::read_counters(c.group(g).pair_counters(p), dataplane::kQueuePairCounters)});
    }
    return s;
  }

  static PortStatsSnapshot of(const dataplane::PortCounters& c) {
    PortStatsSnapshot s;
    s.counters = dataplane::read_counters(c, dataplane::kPortCounters);
    for (std::size_t i = 0; i < s.drops.size(); ++i) s.drops[i] = c.drops[i].get();
    for (std::size_t i = 0; i < s.offload_refused.size(); ++i)
      s.offload_refused[i] = c.offload_refused[i].get();
    for (std::size_t i = 0; i < s.mac_refused.size(); ++i)
      s.mac_refused[i] = c.mac_refused[i].get();
    return s;
  }
  PortStatsSnapshot since(const PortStatsSnapshot& base) const {
    PortStatsSnapshot d{minus(counters, base.counters), minus(drops, base.drops),
                        minus(offload_refused, base.offload_refused),
                        minus(mac_refused, base.mac_refused), pairs};
    for (std::size_t i = 0; i < d.pairs.size() && i < base.pairs.size(); ++i)
      d.pairs[i].counters = minus(pairs[i].counters, base.pairs[i].counters);
    return d;
  }
};

struct ThreadStatsSnapshot {
  dataplane::CounterValues<dataplane::kThreadCounters.size()> counters{};
  dataplane::CounterValues<dataplane::BurstHistogram::kBuckets> bursts{};
  std::uint64_t burst_frames = 0;  // the histogram's sum

  static ThreadStatsSnapshot of(const dataplane::ThreadCounters& c) {
    ThreadStatsSnapshot s;
    s.counters = dataplane::read_counters(c, dataplane::kThreadCounters);
    for (std::size_t i = 0; i < s.bursts.size(); ++i) s.bursts[i] = c.bursts.buckets[i].get();
    s.burst_frames = c.bursts.sum.get();
    return s;
  }
  ThreadStatsSnapshot since(const ThreadStatsSnapshot& base) const {
    return {minus(counters, base.counters), minus(bursts, base.bursts),
            burst_frames - base.burst_frames};
  }
};

// One uplink queue: the port's counters plus the queue's own.
struct UplinkQueueStatsSnapshot {
  std::uint32_t queue = 0;
  PortStatsSnapshot port;
  dataplane::CounterValues<dataplane::kUplinkQueueCounters.size()> counters{};

  static UplinkQueueStatsSnapshot of(const dataplane::UplinkQueuePort& p) {
    return {p.queue(), PortStatsSnapshot::of(p.counters()),
            dataplane::read_counters(p.queue_counters(), dataplane::kUplinkQueueCounters)};
  }
  UplinkQueueStatsSnapshot since(const UplinkQueueStatsSnapshot& b) const {
    return {queue, port.since(b.port), minus(counters, b.counters)};
  }
};

// An uplink: its queues and its XDP program's drops.
struct UplinkStatsSnapshot {
  std::vector<UplinkQueueStatsSnapshot> queues;
  std::uint64_t xdp_oversize = 0;

  static UplinkStatsSnapshot of(const controller::UplinkController& u) {
    UplinkStatsSnapshot s;
    for (const auto& p : u.ports()) s.queues.push_back(UplinkQueueStatsSnapshot::of(*p));
    s.xdp_oversize = u.program_stats().oversize_dropped;
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
