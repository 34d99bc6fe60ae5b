#pragma once
// Datapath counters. Each is written by one service thread only (plain
// relaxed load + store, no locked instruction) and read by the control
// thread and the metrics exporter at any time without locks.

#include <array>
#include <atomic>
#include <cstdint>

#include "dataplane/drop_reason.hpp"

namespace xdpvhost::dataplane {

class Counter {
 public:
  void add(std::uint64_t n = 1) noexcept {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t get() const noexcept { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// Directions are the switch's, as in OVS and DPDK's vhost PMD: rx = frames
// the switch received from the port (a guest's transmit queues, a NIC's RX
// ring), tx = frames it sent into the port (a guest's receive queues, a
// NIC's TX ring).
struct PortCounters {
  Counter rx_packets, rx_bytes;
  Counter tx_packets, tx_bytes;
  Counter kicks;                  // guest notifications read from kick eventfds
  Counter interrupts;             // call eventfd writes
  Counter interrupts_suppressed;  // used updates the guest asked not to be told about
  Counter queue_errors;           // queues broken by a malformed ring
  std::array<Counter, static_cast<std::size_t>(DropReason::kCount)> drops;

  void drop(DropReason r, std::uint64_t n = 1) noexcept {
    drops[static_cast<std::size_t>(r)].add(n);
  }
};

// Burst sizes (frames moved per poll round) in power-of-two buckets:
// 1, 2, 4, ... 256, and more.
struct BurstHistogram {
  static constexpr std::size_t kBuckets = 10;
  static constexpr std::uint32_t upper_bound(std::size_t i) { return 1u << i; }  // last is +Inf
  std::array<Counter, kBuckets> buckets;
  Counter sum;
  Counter count;

  void record(std::uint32_t frames) noexcept {
    std::size_t i = 0;
    while (i + 1 < kBuckets && frames > upper_bound(i)) ++i;
    buckets[i].add();
    sum.add(frames);
    count.add();
  }
};

struct ThreadCounters {
  Counter busy_iterations;    // poll rounds that moved frames
  Counter empty_iterations;   // poll rounds that found nothing (busy polling)
  Counter sleeps;             // times the thread blocked in epoll
  Counter wakeups;            // times it woke from epoll
  Counter commands;           // control commands executed
  Counter dropped_port_gone;  // mailbox frames for a port removed meanwhile
  BurstHistogram bursts;
};

}  // namespace xdpvhost::dataplane
