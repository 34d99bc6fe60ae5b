#pragma once
// Test-only device side of one split ring, over the same GuestMemoryArena a
// DriverQueue writes: finds the rings through their user addresses (as a
// vhost-user backend would), walks and validates chains, writes used entries
// and decides interrupts with EVENT_IDX or the NO_INTERRUPT flag. It lets the
// frontend's own tests check the driver side without any backend.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "frontend/driver_queue.hpp"
#include "frontend/guest_memory_arena.hpp"
#include "virtio/net_header.hpp"

namespace xdpvhost::testing {

enum class ChainError {
  kNone,
  kIndexJump,  // avail idx moved more than the ring size
  kHeadOutOfRange,
  kNextOutOfRange,
  kLoop,
  kTooLong,  // more descriptors than the ring size
  kNestedIndirect,
  kIndirectBadLength,
  kIndirectWithNext,
  kOutOfBounds,  // buffer or table not inside guest memory
  kReadableAfterWritable,
};

const char* chain_error_name(ChainError e);

struct DeviceSegment {
  std::uint8_t* data;
  std::uint32_t len;
  bool writable;
};

struct DeviceChain {
  std::uint16_t head = 0;
  bool indirect = false;
  std::vector<DeviceSegment> segments;

  std::vector<std::uint8_t> readable_bytes() const;
  std::size_t writable_capacity() const;
  // Writes `bytes` over the writable segments in order; false if they don't fit.
  bool write(std::span<const std::uint8_t> bytes) const;
};

class LoopbackDevice {
 public:
  LoopbackDevice(const GuestMemoryArena& memory, const DriverQueue& queue);

  // Avail entries not yet taken.
  std::uint16_t pending() const;
  // Next chain; nullopt when none is available or it is malformed (`error`
  // says which). A malformed head is consumed, an index jump is not.
  std::optional<DeviceChain> pop(ChainError* error = nullptr);

  void push_used(std::uint16_t head, std::uint32_t len);  // not visible until publish
  void publish_used();
  // Signals the call eventfd if the driver asked for it since the last
  // signal (used_event with EVENT_IDX, else !NO_INTERRUPT). Returns whether it did.
  bool signal_if_needed();

  void set_no_notify(bool on);
  void set_avail_event(std::uint16_t value);
  std::uint64_t drain_kicks();  // kicks received since the last call

  std::uint16_t last_avail() const noexcept { return last_avail_; }
  std::uint16_t used_shadow() const noexcept { return used_idx_; }

  // virtio-net RX: writes one frame (header + bytes) into as many chains as
  // needed (only one without mergeable buffers), publishes them, and returns
  // the chains used (0 if it did not fit / no buffers).
  std::size_t deliver_frame(std::span<const std::uint8_t> frame, virtio::NetHeader header,
                            std::size_t header_size, bool mergeable);

 private:
  const GuestMemoryArena* memory_;
  const DriverQueue* queue_;
  std::uint16_t size_;
  bool event_idx_;
  virtio::Descriptor* desc_;
  std::uint8_t* avail_;
  std::uint8_t* used_;
  std::uint16_t last_avail_ = 0;
  std::uint16_t used_idx_ = 0;
  std::uint16_t signalled_used_ = 0;
  bool signalled_valid_ = false;
};

}  // namespace xdpvhost::testing
