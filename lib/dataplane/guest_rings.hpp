#pragma once
// The virtqueues of one guest port (a vhost-user virtio-net device, or the
// queue group of it one service thread serves), their kick/call/err
// eventfds, and what the guest negotiated for them. Started and stopped by
// the port's commands; read and written by its two directions
// (guest_tx.hpp: the guest's transmit queues, guest_rx.hpp: its receive
// queues). Used entries are published once per signal_batch and at the end
// of every burst, and the guest is interrupted only when EVENT_IDX /
// NO_INTERRUPT says it wants it. Owned by one service thread; the queue
// states may be read from any thread.

#include <array>
#include <atomic>
#include <cstdint>
#include <vector>

#include "dataplane/counters.hpp"
#include "net/guest_forward.hpp"
#include "sys/unique_fd.hpp"
#include "vhost/device.hpp"
#include "vhost/device_backend.hpp"
#include "virtio/split_queue.hpp"

namespace xdpvhost::dataplane {

class Port;

// One vring of the port and its eventfds.
struct GuestQueue {
  virtio::SplitQueue ring;
  sys::UniqueFd kick;
  sys::UniqueFd call;
  sys::UniqueFd err;
  bool running = false;
  bool error_reported = false;
  // (receive queues) The receive buffers at the head of the ring held
  // `short_room` bytes when a frame did not fit: while the ring is where it
  // was then (same avail and last-avail index), a frame needing as much is
  // dropped without walking them again (GuestRx::write_to_guest).
  bool short_valid = false;
  std::uint16_t short_avail = 0;
  std::uint16_t short_last = 0;
  std::uint32_t short_room = 0;
};

// What the guest negotiated (the features of its last ring start) and the
// frame limit, read by both directions.
struct GuestLink {
  std::uint32_t header_size = 12;     // the virtio-net header before every frame
  std::uint32_t max_frame = 0;        // the longest plain frame, both ways: the port's MTU's
  bool mergeable = false;             // MRG_RXBUF: a frame may take several receive chains
  bool guest_csum = false;            // GUEST_CSUM: DATA_VALID is read
  net::GuestOffloads guest_offloads;  // what it takes
  bool host_tso4 = false, host_tso6 = false, host_uso = false;  // what it may send
  bool host_ecn = false;

  // A chain longer than the longest frame the guest may send: 64 KiB +
  // headers with segmentation offload, else its MTU.
  std::uint32_t longest_sent() const noexcept;
  void set_features(std::uint64_t features) noexcept;
};

class GuestRings {
 public:
  enum class QueueState : std::uint8_t { kStopped, kRunning, kBroken };
  static constexpr std::uint32_t kMaxVrings = vhost::Device::kMaxVrings;
  static constexpr std::uint32_t kMaxQueuePairs = vhost::Device::kMaxQueuePairs;

  // `port` names the rings in logs, counts their signals and errors, and is
  // told when their wait fds change.
  GuestRings(Port& port, std::uint32_t max_frame);

  static bool is_tx(std::uint32_t vring) noexcept { return (vring & 1) != 0; }

  // ---- commands (owning thread) ----
  // Attaches the ring (broken at once if it cannot be); the link takes the
  // start's features.
  void start(vhost::QueueStart&& start);
  // Publishes and signals what is staged, detaches; returns where the ring
  // stopped (its last avail index).
  std::uint16_t stop(std::uint32_t vring);

  // ---- the directions (owning thread) ----
  GuestQueue& queue(std::uint32_t vring) noexcept { return queues_[vring]; }
  std::uint32_t vring_of(const GuestQueue& q) const noexcept {
    return static_cast<std::uint32_t>(&q - queues_.data());
  }
  GuestLink& link() noexcept { return link_; }
  const GuestLink& link() const noexcept { return link_; }
  // Running vrings, ascending (the rounds walk these, not every slot).
  const std::vector<std::uint32_t>& rx_vrings() const noexcept { return rx_vrings_; }
  const std::vector<std::uint32_t>& tx_vrings() const noexcept { return tx_vrings_; }
  const std::vector<std::uint32_t>& running() const noexcept { return running_vrings_; }
  QueuePairCounters& pair(std::uint32_t vring) noexcept { return pair_counters_[vring / 2]; }

  // Publishes the staged used entries and signals the guest if it wants it.
  void flush(GuestQueue& q) noexcept;
  // The queue's ring broke (its error() says why): reported once, counted,
  // logged at a bounded rate, the guest told through the err eventfd.
  void report_broken(GuestQueue& q);
  // A syscall on one of the queue's eventfds slept: the queue breaks.
  void eventfd_blocked(GuestQueue& q);

  // ---- status (any thread) ----
  QueueState state(std::uint32_t vring) const noexcept {
    return status_[vring].state.load(std::memory_order_relaxed);
  }
  virtio::QueueError error(std::uint32_t vring) const noexcept {
    return status_[vring].error.load(std::memory_order_relaxed);
  }
  bool broken() const noexcept;
  const QueuePairCounters& pair_counters(std::uint32_t pair) const noexcept {
    return pair_counters_[pair];
  }
  std::uint64_t features() const noexcept { return features_.load(std::memory_order_relaxed); }
  // GUEST_TSO4/6: what an uplink's GRO may make for this guest.
  bool takes_tso(bool ipv6) const noexcept {
    return (takes_gso_.load(std::memory_order_relaxed) & (ipv6 ? 2u : 1u)) != 0;
  }

 private:
  struct Status {
    std::atomic<QueueState> state{QueueState::kStopped};
    std::atomic<virtio::QueueError> error{virtio::QueueError::kNone};
  };
  void refresh_lists();

  Port& port_;
  GuestLink link_;
  std::atomic<std::uint64_t> features_{0};
  std::atomic<std::uint32_t> takes_gso_{0};  // bit 0 GUEST_TSO4, bit 1 GUEST_TSO6
  std::array<GuestQueue, kMaxVrings> queues_;
  std::array<Status, kMaxVrings> status_;
  std::array<QueuePairCounters, kMaxQueuePairs> pair_counters_;
  std::vector<std::uint32_t> rx_vrings_;       // guest RX
  std::vector<std::uint32_t> tx_vrings_;       // guest TX
  std::vector<std::uint32_t> running_vrings_;  // both
};

}  // namespace xdpvhost::dataplane
