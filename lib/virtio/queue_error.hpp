#pragma once
// Why a virtqueue was declared broken. A broken queue is never touched again
// until the frontend sets it up anew; no other queue or port is affected.

#include <cstdint>

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

constexpr const char* to_string(QueueError e) {
  switch (e) {
    case QueueError::kNone:
      return "none";
    case QueueError::kRingSize:
      return "ring_size";
    case QueueError::kRingAddress:
      return "ring_address";
    case QueueError::kRingMisaligned:
      return "ring_misaligned";
    case QueueError::kAvailIndexJump:
      return "avail_index_jump";
    case QueueError::kHeadOutOfRange:
      return "head_out_of_range";
    case QueueError::kNextOutOfRange:
      return "next_out_of_range";
    case QueueError::kDescriptorLoop:
      return "descriptor_loop";
    case QueueError::kChainTooLong:
      return "chain_too_long";
    case QueueError::kNestedIndirect:
      return "nested_indirect";
    case QueueError::kIndirectLength:
      return "indirect_length";
    case QueueError::kIndirectWithNext:
      return "indirect_with_next";
    case QueueError::kBufferOutOfRange:
      return "buffer_out_of_range";
    case QueueError::kReadableAfterWritable:
      return "readable_after_writable";
    case QueueError::kUnexpectedWritable:
      return "unexpected_writable";
    case QueueError::kUnexpectedReadable:
      return "unexpected_readable";
    case QueueError::kTooManyDescriptors:
      return "too_many_descriptors";
    case QueueError::kEmptyChain:
      return "empty_chain";
    case QueueError::kMemoryTruncated:
      return "memory_truncated";
    case QueueError::kLogOutOfRange:
      return "log_out_of_range";
    case QueueError::kBeyondAnyFrame:
      return "beyond_any_frame";
    case QueueError::kEventfdBlocks:
      return "eventfd_blocks";
    case QueueError::kCount:
      break;
  }
  return "unknown";
}

}  // namespace xdpvhost::virtio
