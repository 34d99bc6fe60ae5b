#pragma once
// Run-time tunables of the datapath. The control side changes them by
// posting a command to each service thread; the thread reads its own copy.

#include <cstdint>

namespace xdpvhost::dataplane {

struct Tunables {
  std::uint32_t busy_poll_us = 50;       // keep polling this long after the last work (000)
  std::uint32_t signal_batch = 32;       // used entries published per interrupt decision (001)
  std::uint32_t rx_burst = 64;           // frames taken from an uplink RX ring per round
  std::uint32_t tx_burst = 64;           // chains taken from a guest TX queue per round
  std::uint32_t tx_inflight_max = 1024;  // frames between AF_XDP TX and completion (003)
  bool napi_busy_poll = false;           // drive the NIC's NAPI from the service thread (002)
  std::uint32_t busy_poll_budget = 64;   // SO_BUSY_POLL_BUDGET
};

// Per-port overrides of the burst and batch sizes.
struct PortTunables {
  std::uint32_t signal_batch = 32;
  std::uint32_t rx_burst = 64;
  std::uint32_t tx_burst = 64;
};

}  // namespace xdpvhost::dataplane
