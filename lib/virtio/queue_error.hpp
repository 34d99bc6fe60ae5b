#pragma once
// Why a virtqueue was declared broken. A broken queue is never touched again
// until the frontend sets it up anew; no other queue or port is affected.

#include <cstdint>

#include "sys/enum_names.hpp"

namespace xdpvhost::virtio {

enum class QueueError : std::uint8_t {
  kNone,
  kRingSize,               // size zero, above 32768 or not a power of two
  kRingAddress,            // a ring part lies outside the memory table
  kRingMisaligned,         // a ring part breaks the alignment the spec requires
  kAvailIndexJump,         // avail idx moved by more than the ring size
  kHeadOutOfRange,         // an avail entry names a descriptor beyond the table
  kNextOutOfRange,         // a next field names a descriptor beyond the table
  kDescriptorLoop,         // a chain visits a descriptor twice
  kChainTooLong,           // a chain has more descriptors than the ring
  kNestedIndirect,         // an indirect table holds an indirect descriptor
  kIndirectLength,         // indirect table length is 0, not a multiple of 16, or too big
  kIndirectWithNext,       // INDIRECT and NEXT both set
  kBufferOutOfRange,       // a buffer lies (partly) outside the memory table
  kReadableAfterWritable,  // a device-readable descriptor follows a writable one
  kUnexpectedWritable,     // a transmit chain holds writable buffers
  kUnexpectedReadable,     // a receive chain holds readable buffers
  kTooManyDescriptors,     // a chain holds more than kMaxChainDescriptors buffers
  kEmptyChain,             // a chain without a single byte to read or write
  kMemoryTruncated,        // the guest memory's file was cut short under its mapping
  kLogOutOfRange,   // a write to log lies beyond the dirty log (or the used ring's log address)
  kBeyondAnyFrame,  // a transmit chain longer than the longest frame a device may be sent
  kEventfdBlocks,   // its kick, call or err eventfd slept: the frontend cleared O_NONBLOCK
  kCount
};

inline constexpr sys::EnumNames<QueueError, 22> kQueueErrorNames{{
    {QueueError::kNone, "none"},
    {QueueError::kRingSize, "ring_size"},
    {QueueError::kRingAddress, "ring_address"},
    {QueueError::kRingMisaligned, "ring_misaligned"},
    {QueueError::kAvailIndexJump, "avail_index_jump"},
    {QueueError::kHeadOutOfRange, "head_out_of_range"},
    {QueueError::kNextOutOfRange, "next_out_of_range"},
    {QueueError::kDescriptorLoop, "descriptor_loop"},
    {QueueError::kChainTooLong, "chain_too_long"},
    {QueueError::kNestedIndirect, "nested_indirect"},
    {QueueError::kIndirectLength, "indirect_length"},
    {QueueError::kIndirectWithNext, "indirect_with_next"},
    {QueueError::kBufferOutOfRange, "buffer_out_of_range"},
    {QueueError::kReadableAfterWritable, "readable_after_writable"},
    {QueueError::kUnexpectedWritable, "unexpected_writable"},
    {QueueError::kUnexpectedReadable, "unexpected_readable"},
    {QueueError::kTooManyDescriptors, "too_many_descriptors"},
    {QueueError::kEmptyChain, "empty_chain"},
    {QueueError::kMemoryTruncated, "memory_truncated"},
    {QueueError::kLogOutOfRange, "log_out_of_range"},
    {QueueError::kBeyondAnyFrame, "beyond_any_frame"},
    {QueueError::kEventfdBlocks, "eventfd_blocks"},
}};
static_assert(sys::in_enum_order(kQueueErrorNames, static_cast<std::size_t>(QueueError::kCount)));

constexpr const char* to_string(QueueError e) {
  return sys::name_of(kQueueErrorNames, e);
}

}  // namespace xdpvhost::virtio
