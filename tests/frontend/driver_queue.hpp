#pragma once
// The driver side of one split virtqueue (virtio 1.2, 2.7) in a
// GuestMemoryArena: descriptor free list, chains (direct or through an
// indirect table), avail ring publishing, kick decisions (VIRTQ_USED_F_NO_NOTIFY
// or avail_event with EVENT_IDX), used ring consumption with used_event
// updates, and the kick/call eventfds. It behaves like Linux's virtio_ring.
//
// Single-threaded: one test thread drives it; the device is another process
// (or a test's loopback reader) working on the same memory.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frontend/guest_memory_arena.hpp"
#include "sys/event_fd.hpp"
#include "virtio/split_ring_layout.hpp"

namespace xdpvhost::testing {

struct BufferSegment {
  std::uint64_t gpa = 0;
  std::uint32_t len = 0;
  bool device_writable = false;
};

// A chain the device returned through the used ring.
struct UsedBuffer {
  std::uint16_t id = 0;   // head descriptor index
  std::uint32_t len = 0;  // bytes the device says it wrote
  std::vector<BufferSegment> segments;
  bool indirect = false;
};

struct DriverQueueOptions {
  std::uint16_t size = 256;  // power of two, at most 32768
  bool event_idx = false;
  std::uint32_t indirect_capacity = 32;  // entries per indirect table
};

class DriverQueue {
 public:
  // Allocates the descriptor table, avail and used rings from `memory`.
  // `index` is the vhost-user vring index this queue is sent as.
  DriverQueue(GuestMemoryArena& memory, std::uint16_t index, const DriverQueueOptions& options);
  DriverQueue(const DriverQueue&) = delete;
  DriverQueue& operator=(const DriverQueue&) = delete;

  std::uint16_t index() const noexcept { return index_; }
  std::uint16_t size() const noexcept { return size_; }
  bool event_idx() const noexcept { return event_idx_; }
  std::uint64_t desc_gpa() const noexcept { return desc_gpa_; }
  std::uint64_t avail_gpa() const noexcept { return avail_gpa_; }
  std::uint64_t used_gpa() const noexcept { return used_gpa_; }
  GuestMemoryArena& memory() const noexcept { return *memory_; }
  const sys::EventFd& kick_fd() const noexcept { return kick_; }
  const sys::EventFd& call_fd() const noexcept { return call_; }

  // ---- adding buffers ----------------------------------------------------
  std::uint16_t num_free() const noexcept { return static_cast<std::uint16_t>(free_.size()); }
  std::uint16_t in_flight() const noexcept { return in_flight_; }
  // Publishes one chain (device-readable segments must come first). With
  // `indirect` the segments go into an indirect table and the chain takes one
  // descriptor. Returns the head, or nullopt when there is no room.
  std::optional<std::uint16_t> add_chain(std::span<const BufferSegment> segments,
                                         bool indirect = false);
  std::optional<std::uint16_t> add_outbuf(std::span<const BufferSegment> segments,
                                          bool indirect = false);  // all device-readable
  std::optional<std::uint16_t> add_inbuf(std::span<const BufferSegment> segments,
                                         bool indirect = false);  // all device-writable

  // ---- notifications -----------------------------------------------------
  // Kicks the device if the ring says it wants a kick for what was added since
  // the last kick(): avail_event with EVENT_IDX, else the NO_NOTIFY flag.
  // Returns true if the kick eventfd was written.
  bool kick();
  bool kick_needed() const noexcept;
  // Writes the kick eventfd unconditionally (counted as sent).
  void notify();
  std::uint64_t kicks_sent() const noexcept { return kicks_sent_; }
  std::uint64_t kicks_suppressed() const noexcept { return kicks_suppressed_; }

  // ---- used buffers ------------------------------------------------------
  bool has_used() const noexcept;
  // Next used chain, its descriptors back on the free list. A used element
  // that names no chain in flight is counted in device_errors() and skipped.
  std::optional<UsedBuffer> get_used();
  // Stops interrupts (NO_INTERRUPT flag, or used_event far behind with EVENT_IDX).
  void disable_interrupts();
  // Re-arms interrupts for the next used buffer; returns true if used buffers
  // are already pending (the caller should poll instead of sleeping).
  bool enable_interrupts();
  // Arms interrupts only after `count` more used buffers (EVENT_IDX only).
  void enable_interrupts_after(std::uint16_t count);
  void set_used_event(std::uint16_t value) noexcept;
  // Waits for a call eventfd signal; adds the signals drained to interrupts().
  bool wait_for_interrupt(std::chrono::milliseconds timeout);
  // Drains the call eventfd without waiting; returns the signals drained.
  std::uint64_t drain_interrupts();
  std::uint64_t interrupts() const noexcept { return interrupts_; }
  std::uint64_t device_errors() const noexcept { return device_errors_; }
  const std::string& last_error() const noexcept { return last_error_; }

  // ---- ring state --------------------------------------------------------
  std::uint16_t avail_idx() const noexcept { return avail_idx_; }  // driver's shadow
  std::uint16_t last_used_idx() const noexcept { return last_used_; }
  std::uint16_t used_idx() const noexcept;     // as the device published it
  std::uint16_t used_flags() const noexcept;   // device's flags (NO_NOTIFY)
  std::uint16_t avail_event() const noexcept;  // device's avail_event
  std::uint16_t used_event() const noexcept;   // driver's used_event
  std::uint16_t avail_flags() const noexcept;

  // The base sent with SET_VRING_BASE (0 on a fresh queue; GET_VRING_BASE's
  // answer after a stop).
  std::uint16_t device_base() const noexcept { return device_base_; }
  void set_device_base(std::uint16_t base) noexcept { device_base_ = base; }

  // Guest reset: zeroes the rings and forgets every chain; counters restart.
  void reset(bool event_idx);

  // ---- raw access for corruption tests -----------------------------------
  virtio::Descriptor* descriptors() const noexcept { return desc_; }
  // Takes a descriptor off the free list for good (it is never freed).
  std::optional<std::uint16_t> take_descriptor();
  // Writes `head` into the next avail slot and publishes the new index, with
  // no bookkeeping.
  void push_avail_raw(std::uint16_t head);
  // Publishes an arbitrary avail index (e.g. a jump past the ring size).
  void set_avail_idx_raw(std::uint16_t idx);
  // Guest memory for an indirect table of `entries` descriptors.
  std::uint64_t allocate_table(std::uint32_t entries);

 private:
  struct Chain {
    bool active = false;
    bool indirect = false;
    std::vector<BufferSegment> segments;
    std::vector<std::uint16_t> descs;
  };

  std::uint16_t* avail_ring() const noexcept;
  virtio::UsedElement* used_ring() const noexcept;
  std::uint16_t* used_event_ptr() const noexcept;
  std::uint16_t* avail_event_ptr() const noexcept;
  void publish_head(std::uint16_t head);

  GuestMemoryArena* memory_;
  std::uint16_t index_;
  std::uint16_t size_;
  bool event_idx_;
  std::uint32_t indirect_capacity_;
  std::uint64_t desc_gpa_;
  std::uint64_t avail_gpa_;
  std::uint64_t used_gpa_;
  virtio::Descriptor* desc_;
  std::uint8_t* avail_;
  std::uint8_t* used_;
  sys::EventFd kick_;
  sys::EventFd call_;

  std::vector<std::uint16_t> free_;             // stack; back() is taken next
  std::vector<Chain> chains_;                   // by head index
  std::vector<std::uint64_t> indirect_tables_;  // by head index, 0 = not allocated yet
  std::uint16_t in_flight_ = 0;
  std::uint16_t avail_idx_ = 0;
  std::uint16_t added_since_kick_ = 0;
  std::uint16_t last_used_ = 0;
  std::uint16_t avail_flags_shadow_ = 0;
  std::uint16_t device_base_ = 0;
  std::uint64_t kicks_sent_ = 0;
  std::uint64_t kicks_suppressed_ = 0;
  std::uint64_t interrupts_ = 0;
  std::uint64_t device_errors_ = 0;
  std::string last_error_;
};

}  // namespace xdpvhost::testing
