#pragma once
// Malformed rings for robustness tests. Each function writes one broken chain
// (or index) into a DriverQueue's memory and publishes it on the avail ring,
// without kicking: call queue.notify() (or kick()) afterwards. Descriptors it
// uses are taken off the free list for good. The valid parts point at a real
// buffer (a zero virtio-net header and a small frame), device-writable on RX
// queues (even vring index), device-readable on TX queues.
//
// A correct backend marks the queue broken and never reads or writes outside
// guest memory; the queue stays unusable until the guest resets it.

#include <cstdint>
#include <optional>

#include "frontend/driver_queue.hpp"

namespace xdpvhost::testing {

// A -> B -> A.
std::optional<std::uint16_t> publish_descriptor_loop(DriverQueue& q);
// Every free descriptor in one chain, the last pointing back to the first.
std::optional<std::uint16_t> publish_ring_cycle(DriverQueue& q);
// An indirect table of size()+1 valid, loop-free entries: a chain longer
// than the ring without any loop.
std::optional<std::uint16_t> publish_indirect_chain_longer_than_ring(DriverQueue& q);
// An indirect table whose second entry is itself INDIRECT.
std::optional<std::uint16_t> publish_nested_indirect(DriverQueue& q);
// An INDIRECT descriptor whose length is not a multiple of 16 (or 0).
std::optional<std::uint16_t> publish_indirect_bad_length(DriverQueue& q, std::uint32_t len = 17);
// An INDIRECT descriptor whose table lies outside guest memory.
std::optional<std::uint16_t> publish_indirect_table_outside_memory(DriverQueue& q);

enum class OutsideMemory {
  kPastEnd,       // address just after the highest region
  kInHole,        // address between the two regions (past the end with one region)
  kStraddlesEnd,  // starts in region 0, ends beyond it
  kHugeLength,    // valid address, length 0xffffffff
  kWrapsAround,   // address + length overflows 64 bits
};
// One descriptor whose buffer is (partly) outside guest memory.
std::optional<std::uint16_t> publish_address_outside_memory(DriverQueue& q, OutsideMemory where);

// Moves the avail index forward by `jump` (default size()+1) at once.
void publish_avail_index_jump(DriverQueue& q, std::uint32_t jump = 0);
// Publishes a head index >= size() (default size()).
void publish_head_out_of_range(DriverQueue& q, std::optional<std::uint16_t> head = std::nullopt);
// A descriptor with INDIRECT and NEXT both set.
std::optional<std::uint16_t> publish_indirect_with_next(DriverQueue& q);
// A descriptor whose next index is >= size().
std::optional<std::uint16_t> publish_next_out_of_range(DriverQueue& q);
// A device-writable descriptor followed by a device-readable one (the
// virtio spec requires all readable descriptors first).
std::optional<std::uint16_t> publish_readable_after_writable(DriverQueue& q);

}  // namespace xdpvhost::testing
