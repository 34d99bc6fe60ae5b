#pragma once
// What both directions of one uplink queue share (uplink_rx.hpp: NIC ->
// guests, uplink_tx.hpp: guests -> NIC): the AF_XDP socket and its UMEM,
// the packet socket for floods, the link state, the queue's options,
// status and counters, and the port it is. Owned by one service thread;
// the status may be read from any thread.

#include <atomic>
#include <cstdint>
#include <memory>

#include "dataplane/counters.hpp"
#include "dataplane/tunables.hpp"
#include "nic/flood_socket.hpp"
#include "xsk/umem.hpp"
#include "xsk/xsk_socket.hpp"

namespace xdpvhost::dataplane {

class Port;

// What the control side and the metrics see of one uplink queue.
struct UplinkQueueStatus {
  std::atomic<bool> bound{false};
  std::atomic<bool> zero_copy{false};
  std::atomic<bool> multi_buffer{false};
  std::atomic<bool> tx_checksum_offload{false};  // see UplinkTx::checksum_offload_
  std::atomic<bool> link_up{false};
  std::atomic<std::uint32_t> napi_id{0};
  std::atomic<bool> napi_busy_poll_requested{false};
  std::atomic<bool> napi_busy_poll_active{false};
};

struct UplinkQueue {
  struct Options {
    std::uint32_t queue = 0;
    std::uint32_t max_frame = 1518;  // longest frame sent to the NIC
    Tunables tunables;
  };

  // Longest chain handled either way: a 9018-byte frame is 6 RX descriptors
  // of 2048-byte frames (1792 bytes of room), 65549 bytes 37; copy-mode TX
  // takes at most 18 (xsk::kCopyModeMaxTxDescriptors).
  static constexpr std::uint32_t kMaxChain = 64;

  UplinkQueue(Port& owner, const Options& o) : port(owner), options(o) {}

  void set_link_up(bool up) noexcept {
    link_up = up;
    status.link_up.store(up);
  }

  Port& port;  // the switch port this queue is (the forwarder's `from`, its counters)
  Options options;
  std::unique_ptr<xsk::Umem> umem;
  std::unique_ptr<xsk::XskSocket> socket;
  std::unique_ptr<nic::FloodSocket> flood;
  bool link_up = false;
  UplinkQueueStatus status;
  UplinkQueueCounters counters;
};

}  // namespace xdpvhost::dataplane
