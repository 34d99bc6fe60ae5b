#pragma once
// The device side of one split virtqueue living in guest memory.
//
// Owned by exactly one service thread. Memory orders against the driver (the
// guest, in another process) are spelled out in split_queue.cpp:
//   avail->idx  load-acquire, then ring entries and descriptors are read;
//   used ring entries are written, then used->idx store-release;
//   a full fence separates "used->idx published" from "read used_event/flags"
//   and "notifications enabled" from "re-read avail->idx" (no lost kick or
//   interrupt).

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "virtio/descriptor_chain.hpp"
#include "virtio/dirty_log.hpp"
#include "virtio/guest_memory.hpp"
#include "virtio/queue_error.hpp"
#include "virtio/split_ring_layout.hpp"

namespace xdpvhost::virtio {

class SplitQueue {
 public:
  struct Config {
    std::uint32_t size = 0;
    std::uint64_t desc_uva = 0;  // frontend virtual addresses (vhost-user SET_VRING_ADDR)
    std::uint64_t avail_uva = 0;
    std::uint64_t used_uva = 0;
    std::uint16_t last_avail_idx = 0;  // SET_VRING_BASE
    bool event_idx = false;
    // Dirty logging (live migration): set while the frontend acked LOG_ALL
    // and gave a log; every write into guest memory is then marked in it.
    std::shared_ptr<const DirtyLog> log;
    // VHOST_VRING_F_LOG: writes to the used ring are marked too, at
    // used_log_gpa (the guest physical address of the used ring).
    bool log_used = false;
    std::uint64_t used_log_gpa = 0;
  };

  // What a chain is allowed to hold.
  enum class Direction : std::uint8_t { kDeviceReads, kDeviceWrites };

  SplitQueue() = default;
  SplitQueue(const SplitQueue&) = delete;
  SplitQueue& operator=(const SplitQueue&) = delete;

  // Translates and checks the ring. Returns kNone or why the ring is unusable
  // (the queue is then broken).
  QueueError attach(std::shared_ptr<const GuestMemory> memory, const Config& config);
  void detach() noexcept;

  bool attached() const noexcept { return memory_ != nullptr; }
  bool broken() const noexcept { return error_ != QueueError::kNone; }
  bool usable() const noexcept { return attached() && !broken(); }
  QueueError error() const noexcept { return error_; }
  std::uint32_t size() const noexcept { return size_; }
  std::uint16_t last_avail_idx() const noexcept { return last_avail_idx_; }
  const std::shared_ptr<const GuestMemory>& memory() const noexcept { return memory_; }

  // Chains the driver has made available and we have not popped yet: the
  // cached count, or (when that is below `want`) what the driver's avail
  // index says now. available() reads the index only once the cache is used
  // up; a caller that needs n chains at once asks available(n).
  std::uint16_t available(std::uint16_t want = 1) noexcept;
  // The driver's avail index as it is now (an acquire load; no check).
  std::uint16_t driver_avail_idx() const noexcept { return load_avail_idx(); }

  // The most buffers one chain may hold (Linux vhost: UIO_MAXIOV); a chain
  // with more breaks the queue. A guest's frame needs a few (a 64 KiB TSO
  // frame about 20).
  static constexpr std::uint32_t kMaxChainDescriptors = 1024;

  // Pops the next chain into `out`. Returns false if there is none or the
  // queue broke while reading it (then error() tells why). The walk stops
  // once the chain holds more than `max_bytes`, or before its descriptor
  // number `max_descriptors` + 1 (out.truncated either way; the chain is
  // still popped: the caller drops it and returns it used, or unpops it).
  bool pop(DescriptorChain& out, Direction direction, std::uint32_t max_bytes = 0xffffffffu,
           std::uint32_t max_descriptors = kMaxChainDescriptors) noexcept;

  // The caller found the last popped chain to be beyond what the device
  // accepts (e.g. longer than any frame): the queue is broken for `e`.
  void refuse(QueueError e) noexcept { fail(e); }

  // Gives the last `count` popped chains back to the driver's ring, unused.
  void unpop(std::uint16_t count) noexcept { last_avail_idx_ -= count; }

  // Dirty logging is on for this ring (one predictable branch to test).
  bool logging() const noexcept { return log_ != nullptr; }
  // Marks the first `bytes` of the chain's writable buffers dirty (the
  // caller wrote them). False, and the queue broken, if the log cannot
  // hold them.
  bool log_writes(const DescriptorChain& chain, std::uint32_t bytes) noexcept;

  // Writes a used element; the driver sees it at publish_used().
  void add_used(std::uint16_t head, std::uint32_t len) noexcept;
  std::uint16_t staged_used() const noexcept { return staged_; }

  // One release store of used->idx covering every staged element.
  void publish_used() noexcept;

  // After publish_used(): does the driver want an interrupt for what was
  // published since the last signal? (EVENT_IDX used_event, else NO_INTERRUPT.)
  bool should_signal() noexcept;

  // Ask the driver to kick us; returns true if chains arrived meanwhile, in
  // which case the caller must poll again instead of sleeping.
  bool enable_notifications() noexcept;
  void disable_notifications() noexcept;

 private:
  bool fail(QueueError e) noexcept {
    error_ = e;
    return false;
  }
  bool walk(std::uint16_t head, DescriptorChain& out, Direction direction, std::uint32_t max_bytes,
            std::uint32_t max_descriptors) noexcept;
  bool add_buffer(const Descriptor& d, DescriptorChain& out, Direction direction) noexcept;
  std::uint16_t load_avail_idx() const noexcept;
  // Marks [offset, offset + len) of the used ring dirty, if its writes are logged.
  void log_used(std::size_t offset, std::size_t len) const noexcept;
  // Marks the used elements staged since the last publish and used->idx.
  void log_published(std::uint16_t from, std::uint16_t count) const noexcept;

  std::shared_ptr<const GuestMemory> memory_;
  std::uint8_t* desc_ = nullptr;
  std::uint8_t* avail_ = nullptr;
  std::uint8_t* used_ = nullptr;
  std::uint32_t size_ = 0;
  bool event_idx_ = false;
  QueueError error_ = QueueError::kNone;
  std::shared_ptr<const DirtyLog> log_;
  bool log_used_ = false;
  std::uint64_t used_log_gpa_ = 0;

  std::uint16_t last_avail_idx_ = 0;  // next avail entry to pop
  std::uint16_t avail_idx_ = 0;       // last avail->idx read
  std::uint16_t used_idx_ = 0;        // next used entry to write
  std::uint16_t staged_ = 0;          // written but not published
  std::uint16_t signalled_used_ = 0;  // used idx at the last interrupt decision
  bool signalled_used_valid_ = false;
  bool published_unsignalled_ = false;

  // Loop detection: visited_[i] == generation_ means descriptor i was seen in
  // the chain being walked.
  std::vector<std::uint32_t> visited_;
  std::uint32_t generation_ = 0;

  // Where one buffer's spans are translated before they join the chain: a
  // member, so that no descriptor pays for initialising it.
  static constexpr int kMaxSpansPerBuffer = 16;
  std::array<HostSpan, kMaxSpansPerBuffer> span_scratch_{};
};

}  // namespace xdpvhost::virtio
