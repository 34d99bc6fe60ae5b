#pragma once
// The datapath of one vhost-user virtio-net port: its virtqueues in guest
// memory, their kick/call eventfds, and the copying between guest buffers
// and frames. Owned by one service thread; the control side reaches it only
// through commands (start_queue / stop_queue / set_*), run on that thread.
//
// Guest TX (odd vrings): pop chain -> strip virtio-net header -> forward ->
//   used entry (len 0). Guest RX (even vrings): pop one chain, or several with
//   MRG_RXBUF, -> header + frame copied in -> used entries. Used entries are
//   published once per signal_batch and at the end of every burst, and the
//   guest is interrupted only when EVENT_IDX/NO_INTERRUPT says it wants it.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "dataplane/token_bucket.hpp"
#include "dataplane/frame_backlog.hpp"
#include "dataplane/mac_policy.hpp"
#include "dataplane/mac_refusal.hpp"
#include "dataplane/port.hpp"
#include "net/guest_forward.hpp"
#include "net/offload_validation.hpp"
#include "net/virtio_net_offload.hpp"
#include "dataplane/source_guard.hpp"
#include "dataplane/tunables.hpp"
#include "sys/unique_fd.hpp"
#include "vhost/device.hpp"
#include "vhost/device_backend.hpp"
#include "virtio/descriptor_chain.hpp"
#include "virtio/split_queue.hpp"

namespace xdpvhost::dataplane {

class GuestPort final : public Port {
 public:
  enum class QueueState : std::uint8_t { kStopped, kRunning, kBroken };
  static constexpr std::uint32_t kMaxVrings = vhost::Device::kMaxVrings;
  static constexpr std::uint32_t kMaxQueuePairs = vhost::Device::kMaxQueuePairs;

  struct Options {
    std::uint32_t mtu = 1500;
    PortTunables tunables;
    MacPolicy mac_policy = MacPolicy::kFixed;
    std::optional<net::MacAddress> mac;  // the configured MAC; none: learned
    bool holds_mac = true;  // false: another port of its VM holds `mac` for now (fixed)
  };

  // `learner` (may be null: nothing is learned) is asked when the guest sends
  // from a MAC the port may take; it must outlive the port.
  GuestPort(std::uint32_t id, std::string name, std::uint32_t uplink, Options options,
            MacLearner* learner = nullptr);

  // ---- commands (owning thread) ----
  void start_queue(vhost::QueueStart&& start);
  std::uint16_t stop_queue(std::uint32_t vring, vhost::RingStop why = vhost::RingStop::kForGood);
  void set_mtu(std::uint32_t mtu) noexcept;
  void set_tunables(const PortTunables& t) noexcept {
    tunables_ = t;
    flood_.set_rate(t.flood_rate, flood_bucket(t.flood_rate));
  }
  void set_learn_request_rate(const LearnRequestRate& rate) noexcept {
    source_.set_request_rate(rate);
  }
  // The answers to a learning request (see SourceGuard).
  void mac_learned(const net::MacAddress& mac) noexcept;
  void mac_refused(const net::MacAddress& mac, MacRefusal why) noexcept;
  // The MAC moved to another port (the guest migrated there).
  void mac_released() noexcept { source_.released(); }
  // Announce `mac` (SEND_RARP after a migration): a RARP from it goes out
  // at the next poll, flooded like a broadcast the guest sent (to the
  // uplink and the local guests), and through port security like one.
  void announce(const net::MacAddress& mac) noexcept {
    announce_mac_ = mac;
    announce_pending_ = true;
  }

  // ---- status (any thread) ----
  QueueState queue_state(std::uint32_t vring) const noexcept {
    return status_[vring].state.load(std::memory_order_relaxed);
  }
  virtio::QueueError queue_error(std::uint32_t vring) const noexcept {
    return status_[vring].error.load(std::memory_order_relaxed);
  }
  bool broken() const noexcept;
  // Frames of queue pair `pair` (< kMaxQueuePairs); zero for pairs another
  // queue group of the device polls.
  const QueuePairCounters& pair_counters(std::uint32_t pair) const noexcept {
    return pair_counters_[pair];
  }
  std::uint64_t features() const noexcept { return features_.load(std::memory_order_relaxed); }
  // Frames waiting for the guest to post receive buffers.
  std::uint32_t held() const noexcept { return held_.load(std::memory_order_relaxed); }

  // Frames a port holds at most while its guest has no receive buffer.
  static constexpr std::uint32_t kBacklogFrames = 256;
  static constexpr std::uint32_t kBacklogGsoFrames = 16;
  // Descriptors a port walks at most per round on one transmit queue: a
  // burst of 64-byte frames takes 32 to 64, of 64 KiB TSO frames about 20 per
  // frame (a Linux guest's chains hold at most MAX_SKB_FRAGS + 2 buffers).
  // Chains of many small buffers, just under the frame limit, cost their
  // guest its own rounds, not its neighbours'.
  static constexpr std::uint32_t kDescriptorsPerRound = 256;
  // Receive buffers (MRG_RXBUF) one frame may take at most: enough for a
  // 64 KiB frame in 1500-byte buffers; fewer, larger ones are what guests post.
  static constexpr unsigned kMaxBuffersPerFrame = 64;
  // Descriptors one frame may walk at most over all its receive chains: a
  // Linux guest's take one each (mergeable) or MAX_SKB_FRAGS + 2 (big
  // packets). Buffers spread thinner (zero-length descriptors, say) make the
  // frame too small; the ring is not walked again for a frame as large until
  // the guest changes it.
  static constexpr std::uint32_t kRxDescriptorsPerFrame = 256;

  // ---- Port ----
  unsigned poll(Forwarder& forwarder) override;
  void deliver(const Frame& frame) override;
  bool takes_tso(bool ipv6) const noexcept override {
    return (takes_gso_.load(std::memory_order_relaxed) & (ipv6 ? 2u : 1u)) != 0;
  }
  void end_burst() override;
  bool prepare_sleep() override;
  void after_wake() override;
  void wait_fds(std::vector<WaitFd>& out, bool& needs_timer) override;
  void peer_fd_blocked(int fd) override;

 private:
  struct Queue {
    virtio::SplitQueue ring;
    sys::UniqueFd kick;
    sys::UniqueFd call;
    sys::UniqueFd err;
    bool running = false;
    bool error_reported = false;
    // The receive buffers at the head of the ring held `short_room` bytes
    // when a frame did not fit (within the limits above): while the ring is
    // where it was then (same avail and last-avail index), a frame needing
    // as much is dropped without walking them again.
    bool short_valid = false;
    std::uint16_t short_avail = 0;
    std::uint16_t short_last = 0;
    std::uint32_t short_room = 0;
  };
  struct Status {
    std::atomic<QueueState> state{QueueState::kStopped};
    std::atomic<virtio::QueueError> error{virtio::QueueError::kNone};
  };

  enum class Delivery : std::uint8_t { kDone, kNoBuffer };

  static bool is_tx(std::uint32_t vring) noexcept { return (vring & 1) != 0; }
  // Copies the frame into the guest, or counts why it cannot; kNoBuffer if
  // the guest has no receive buffer now (nothing was counted then).
  Delivery try_deliver(const Frame& frame);
  // Segments made here (the guest takes neither the GSO type nor a partial
  // checksum), each delivered as a frame of its own.
  Delivery deliver_segments(Queue& q, const Frame& frame);
  // Header and the first `len` bytes of the frame into the guest's buffers,
  // `patch` (optional) applied.
  Delivery write_to_guest(Queue& q, const Frame& frame, const net::VirtioNetOffload& offload,
                          std::uint32_t len, const net::GuestForward* patch);
  // No room in `q` for the frame now: kNoBuffer (it waits for the guest's
  // next buffers), or kDone with the queue broken if its ring is malformed.
  Delivery out_of_buffers(Queue& q);
  unsigned drain_backlog();
  void send_announce(Forwarder& forwarder);
  // A frame its source may not send (SourceGuard): dropped, and why counted.
  void count_refused(Admission admission) noexcept;
  // Marks the buffers of the `n` chains the last frame (`bytes`) was
  // written to in the dirty log; false (queue broken) if it cannot.
  bool log_rx(Queue& q, unsigned n, std::uint32_t bytes) noexcept;
  void forget_backlog();
  unsigned poll_tx(Queue& q, std::uint32_t vring, Forwarder& forwarder);
  // False when the chain is no frame; with `refused` set when its offload
  // request failed validation.
  bool frame_from_chain(const virtio::DescriptorChain& chain, Frame& frame,
                        net::OffloadError& refused);
  Queue* pick_rx_queue(const Frame& frame) noexcept;
  void flush(Queue& q) noexcept;
  void report_broken(Queue& q, std::uint32_t vring);
  // A syscall on one of the queue's eventfds slept: the queue breaks.
  void eventfd_blocked(Queue& q);
  void refresh_queue_lists();

  Options options_;
  PortTunables tunables_;
  SourceGuard source_;
  TokenBucket flood_;
  std::uint32_t max_frame_;
  std::atomic<std::uint64_t> features_{0};
  std::uint32_t header_size_ = 12;
  bool mergeable_ = false;
  bool guest_csum_ = false;
  net::GuestOffloads guest_offloads_;  // what it takes: GUEST_CSUM, TSO, ECN, USO
  bool host_tso4_ = false, host_tso6_ = false, host_uso_ = false;  // what it may send
  net::OffloadPolicy tx_policy_;
  std::atomic<std::uint32_t> takes_gso_{0};  // bit 0 GUEST_TSO4, bit 1 GUEST_TSO6

  std::array<Queue, kMaxVrings> queues_;
  std::array<Status, kMaxVrings> status_;
  std::array<QueuePairCounters, kMaxQueuePairs> pair_counters_;
  // Running vrings, ascending (the rounds walk these, not every slot):
  std::vector<std::uint32_t> rx_vrings_;       // guest RX
  std::vector<std::uint32_t> tx_vrings_;       // guest TX
  std::vector<std::uint32_t> running_vrings_;  // both
  FrameBacklog backlog_;
  std::atomic<std::uint32_t> held_{0};
  // Where the backlog waits: the receive queue that had no buffer, and its
  // avail index then (drained again only once it moves).
  Queue* blocked_rx_ = nullptr;
  std::uint16_t blocked_avail_ = 0;
  // The last receive ring stopped to restart (RingStop::kRestart) and has not
  // started again: frames for the guest wait instead of being dropped.
  bool rx_restarting_ = false;
  bool announce_pending_ = false;
  net::MacAddress announce_mac_;

  // Scratch reused for every frame (no allocation after warm-up).
  virtio::DescriptorChain tx_chain_;
  std::vector<Span> tx_spans_;
  std::vector<virtio::DescriptorChain> rx_chains_;
  std::vector<std::uint8_t> segment_buffer_;  // one segment at a time (allocated on first use)
};

}  // namespace xdpvhost::dataplane
