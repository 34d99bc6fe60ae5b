#pragma once
// One descriptor chain popped from a virtqueue, already translated into host
// spans: the device-readable part first, then the device-writable part.

#include <cstdint>
#include <vector>

#include "virtio/guest_memory.hpp"

namespace xdpvhost::virtio {

struct DescriptorChain {
  std::uint16_t head = 0;
  std::uint32_t readable_bytes = 0;
  std::uint32_t writable_bytes = 0;
  std::uint32_t descriptors = 0;  // descriptors walked (the cost of the chain)
  // The walk stopped once the chain held more than the byte limit pop() was
  // given: the rest was not read, the chain is too big for its purpose.
  bool truncated = false;
  std::vector<HostSpan> readable;
  std::vector<HostSpan> writable;

  void clear() noexcept {
    readable.clear();
    writable.clear();
    readable_bytes = writable_bytes = 0;
    descriptors = 0;
    truncated = false;
  }
};

}  // namespace xdpvhost::virtio
