#pragma once
// A virtio-net driver for one queue pair of the test frontend: sends frames on
// the TX queue with the virtio-net header the negotiated features call for,
// posts RX buffers and reassembles received frames (mergeable buffers by
// num_buffers). Chains can be laid out in several ways (header apart, frame
// scattered over descriptors, an indirect table) to exercise the device's
// chain walking.
//
// Buffer memory comes from per-queue slots in guest memory; a slot is reused
// only after the device returned its chain.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frontend/driver_queue.hpp"
#include "frontend/guest_memory_arena.hpp"
#include "virtio/net_header.hpp"

namespace xdpvhost::testing {

enum class ChainLayout : std::uint8_t {
  kSingle,          // header and frame in one descriptor
  kHeaderSeparate,  // header in its own descriptor, frame in the next
  kScattered,       // header, then the frame in pieces of `chunk` bytes
  kHeaderSplit,     // the header itself split over two descriptors (frame follows
                    // the second part); legal with VERSION_1 / ANY_LAYOUT
};

struct TxOptions {
  ChainLayout layout = ChainLayout::kSingle;
  bool indirect = false;      // put the chain in an indirect table
  std::uint32_t chunk = 256;  // piece size for kScattered
  bool kick = true;           // kick (subject to suppression) after queuing
};

struct RxOptions {
  ChainLayout layout = ChainLayout::kSingle;
  bool indirect = false;
  std::uint32_t chunk = 512;  // piece size for kScattered
  bool kick = true;
};

struct ReceivedFrame {
  virtio::NetHeader header{};  // as the device wrote it (num_buffers included)
  std::vector<std::uint8_t> bytes;
  std::uint16_t buffers = 1;  // RX chains the frame used
};

struct NetDriverStats {
  std::uint64_t tx_frames = 0;     // queued
  std::uint64_t tx_no_room = 0;    // send_frame refused: no descriptor or slot
  std::uint64_t tx_completed = 0;  // chains the device returned
  std::uint64_t rx_posted = 0;     // chains posted
  std::uint64_t rx_buffers = 0;    // chains the device returned
  std::uint64_t rx_frames = 0;
  std::uint64_t rx_errors = 0;  // malformed used entries (see last_error())
};

class NetDriver {
 public:
  // `slot_size`: bytes of guest memory per chain (frame + header + gaps).
  NetDriver(GuestMemoryArena& memory, DriverQueue& rx, DriverQueue& tx, std::uint64_t features,
            std::uint32_t slot_size = 16384);
  NetDriver(const NetDriver&) = delete;
  NetDriver& operator=(const NetDriver&) = delete;

  std::uint64_t features() const noexcept { return features_; }
  std::size_t header_size() const noexcept { return header_size_; }
  bool mergeable() const noexcept { return mergeable_; }
  DriverQueue& rx_queue() noexcept { return *rx_; }
  DriverQueue& tx_queue() noexcept { return *tx_; }

  // ---- TX ----------------------------------------------------------------
  // Queues one frame (header prepended; num_buffers forced to 0). Reclaims
  // completed chains first when out of room. false if there is still no room
  // or the frame does not fit a slot.
  bool send_frame(std::span<const std::uint8_t> frame,
                  const std::optional<virtio::NetHeader>& header = std::nullopt,
                  const TxOptions& options = {});
  bool kick_tx() { return tx_->kick(); }
  // Takes back the chains the device finished; returns how many.
  std::size_t reclaim_tx();
  // Reclaims until nothing is in flight on TX or `timeout` passes.
  bool wait_tx_complete(std::chrono::milliseconds timeout);

  // ---- RX ----------------------------------------------------------------
  // Posts up to `count` chains of `size` bytes each (header included).
  // Returns how many were posted.
  std::size_t post_rx_buffers(std::size_t count, std::uint32_t size, const RxOptions& options = {});
  // Collects frames until at least `min_frames` arrived or `timeout` passed,
  // sleeping on the RX call eventfd in between. Consumed chains are posted
  // again with the last post_rx_buffers() parameters unless auto_repost is off.
  std::vector<ReceivedFrame> receive_frames(std::chrono::milliseconds timeout,
                                            std::size_t min_frames = 1);
  // Whatever is already used, without waiting.
  std::vector<ReceivedFrame> poll_frames();
  void set_auto_repost(bool on) noexcept { auto_repost_ = on; }

  std::uint64_t rx_interrupts() const noexcept { return rx_->interrupts(); }
  std::uint64_t tx_interrupts() const noexcept { return tx_->interrupts(); }
  const NetDriverStats& stats() const noexcept { return stats_; }
  const std::string& last_error() const noexcept { return last_error_; }

  // Guest reset: forgets chains and partial frames (the queues are reset by
  // the caller); `features` may change.
  void reset(std::uint64_t features);

 private:
  struct SlotPool {
    std::vector<std::uint64_t> gpa;     // by slot, 0 = not allocated yet
    std::vector<std::uint16_t> free;    // slot numbers
    std::vector<std::int32_t> by_head;  // head -> slot, -1 none
  };

  void init_pool(SlotPool& pool, std::uint16_t queue_size);
  std::optional<std::uint16_t> take_slot(SlotPool& pool);
  void release_head(SlotPool& pool, std::uint16_t head);
  // Segment layout for `total` bytes of which the first `header` are the
  // virtio-net header, inside a slot at `base`. Empty if it does not fit.
  std::vector<BufferSegment> layout_segments(std::uint64_t base, std::size_t header,
                                             std::size_t total, ChainLayout layout,
                                             std::uint32_t chunk, bool writable) const;
  void consume_used(std::vector<ReceivedFrame>& out, std::size_t& consumed);
  void rx_error(std::string message);

  GuestMemoryArena* memory_;
  DriverQueue* rx_;
  DriverQueue* tx_;
  std::uint64_t features_;
  std::size_t header_size_;
  bool mergeable_;
  std::uint32_t slot_size_;
  SlotPool rx_pool_;
  SlotPool tx_pool_;
  bool auto_repost_ = true;
  std::uint32_t repost_size_ = 0;
  RxOptions repost_options_{};
  std::optional<ReceivedFrame> partial_;  // mergeable frame still missing buffers
  std::uint16_t partial_missing_ = 0;
  NetDriverStats stats_;
  std::string last_error_;
};

}  // namespace xdpvhost::testing
