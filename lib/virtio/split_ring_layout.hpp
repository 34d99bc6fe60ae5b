#pragma once
// Memory layout of a split virtqueue (virtio 1.2, section 2.7). All fields are
// little endian; this backend runs on little-endian hosts only.

#include <cstddef>
#include <cstdint>

namespace xdpvhost::virtio {

struct Descriptor {
  static constexpr std::uint16_t kFlagNext = 1;
  static constexpr std::uint16_t kFlagWrite = 2;
  static constexpr std::uint16_t kFlagIndirect = 4;

  std::uint64_t addr;
  std::uint32_t len;
  std::uint16_t flags;
  std::uint16_t next;
};
static_assert(sizeof(Descriptor) == 16);

struct UsedElement {
  std::uint32_t id;
  std::uint32_t len;
};
static_assert(sizeof(UsedElement) == 8);

constexpr std::uint16_t kAvailFlagNoInterrupt = 1;  // driver: do not signal me
constexpr std::uint16_t kUsedFlagNoNotify = 1;      // device: do not kick me

constexpr std::uint32_t kMaxQueueSize = 32768;

// Byte sizes of each part for a ring of `num` entries (with the event fields).
constexpr std::size_t descriptor_table_bytes(std::uint32_t num) {
  return 16u * num;
}
constexpr std::size_t avail_ring_bytes(std::uint32_t num) {
  return 6u + 2u * num;
}
constexpr std::size_t used_ring_bytes(std::uint32_t num) {
  return 6u + 8u * num;
}

// Event-index rule (virtio 1.2, 2.7.10): notify when the index moved past
// `event` since `old`.
constexpr bool need_event(std::uint16_t event, std::uint16_t new_idx, std::uint16_t old_idx) {
  return static_cast<std::uint16_t>(new_idx - event - 1) <
         static_cast<std::uint16_t>(new_idx - old_idx);
}

}  // namespace xdpvhost::virtio
