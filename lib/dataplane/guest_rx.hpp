#pragma once
// A guest port's receive direction: frames from the switch into the guest's
// receive queues (even vrings). Per frame: pick the queue (the flow's, on a
// multi-queue guest), then either pass the frame on as it is, with its
// offload in the virtio-net header (GUEST_TSO4/6, GUEST_CSUM), or cut it
// into segments here (net::segment) for a guest that does not take it;
// pop one chain, or several with MRG_RXBUF, copy header and frame in, mark
// the pages in the dirty log while migrating, stage the used entries.
//
// A guest without a posted buffer does not lose frames: they wait in the
// port's backlog, in order, until its avail index moves (the tun socket's
// queue of vhost_net), and only a full backlog drops (no_rx_buffer).

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "dataplane/frame.hpp"
#include "dataplane/frame_backlog.hpp"
#include "dataplane/guest_rings.hpp"
#include "dataplane/tunables.hpp"
#include "net/guest_forward.hpp"
#include "net/virtio_net_offload.hpp"
#include "vhost/device_backend.hpp"
#include "virtio/descriptor_chain.hpp"

namespace xdpvhost::dataplane {

class GuestRx {
 public:
  // Frames a port holds at most while its guest has no receive buffer.
  static constexpr std::uint32_t kBacklogFrames = 256;
  static constexpr std::uint32_t kBacklogGsoFrames = 16;
  // Receive buffers (MRG_RXBUF) one frame may take at most: enough for a
  // 64 KiB frame in 1500-byte buffers; fewer, larger ones are what guests post.
  static constexpr unsigned kMaxBuffersPerFrame = 64;
  // Descriptors one frame may walk at most over all its receive chains: a
  // Linux guest's take one each (mergeable) or MAX_SKB_FRAGS + 2 (big
  // packets). Buffers spread thinner (zero-length descriptors, say) make the
  // frame too small; the ring is not walked again for a frame as large until
  // the guest changes it.
  static constexpr std::uint32_t kRxDescriptorsPerFrame = 256;

  GuestRx(GuestRings& rings, PortCounters& counters, const PortTunables& tunables,
          std::uint32_t mtu);

  // Copies the frame into the guest, holds it while the guest has no
  // buffer, or counts why neither.
  void deliver(const Frame& frame);
  // Held frames are tried again only when the guest may have posted buffers
  // (the receive queue's avail index moved), not every round: a guest that
  // posts too little for them would otherwise cost a ring walk per round.
  // Returns how many were delivered.
  unsigned drain_if_refilled();
  // Frames wait for the guest's receive buffers.
  bool waiting() const noexcept { return !backlog_.empty(); }
  std::uint32_t held() const noexcept { return held_.load(std::memory_order_relaxed); }

  // A receive ring started / is about to stop (`vring`, why).
  void ring_started() noexcept { restarting_ = false; }
  void ring_stopping(std::uint32_t vring, vhost::RingStop why);

 private:
  enum class Delivery : std::uint8_t { kDone, kNoBuffer };

  // Copies the frame into the guest, or counts why it cannot; kNoBuffer if
  // the guest has no receive buffer now (nothing was counted then).
  Delivery try_deliver(const Frame& frame);
  // Segments made here (the guest takes neither the GSO type nor a partial
  // checksum), each delivered as a frame of its own.
  Delivery deliver_segments(GuestQueue& q, const Frame& frame);
  // Header and the first `len` bytes of the frame into the guest's buffers,
  // `patch` (optional) applied.
  Delivery write_to_guest(GuestQueue& q, const Frame& frame, const net::VirtioNetOffload& offload,
                          std::uint32_t len, const net::GuestForward* patch);
  // No room in `q` for the frame now: kNoBuffer (it waits for the guest's
  // next buffers), or kDone with the queue broken if its ring is malformed.
  Delivery out_of_buffers(GuestQueue& q);
  // Marks the buffers of the `n` chains the last frame (`bytes`) was
  // written to in the dirty log; false (queue broken) if it cannot.
  bool log_rx(GuestQueue& q, unsigned n, std::uint32_t bytes) noexcept;
  GuestQueue* pick_queue(const Frame& frame) noexcept;
  unsigned drain_backlog();
  void forget_backlog();

  GuestRings& rings_;
  PortCounters& counters_;
  const PortTunables& tunables_;
  FrameBacklog backlog_;
  std::atomic<std::uint32_t> held_{0};
  // Where the backlog waits: the receive queue that had no buffer, and its
  // avail index then (drained again only once it moves).
  GuestQueue* blocked_ = nullptr;
  std::uint16_t blocked_avail_ = 0;
  // The last receive ring stopped to restart (RingStop::kRestart) and has not
  // started again: frames for the guest wait instead of being dropped.
  bool restarting_ = false;

  // Scratch reused for every frame (no allocation after warm-up).
  std::vector<virtio::DescriptorChain> chains_;
  std::unique_ptr<std::uint8_t[]> segment_buffer_;  // one segment at a time, kMaxGsoFrame bytes
};

}  // namespace xdpvhost::dataplane
