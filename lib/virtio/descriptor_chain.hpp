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
  std::vector<HostSpan> readable;
  std::vector<HostSpan> writable;

  void clear() noexcept {
    readable.clear();
    writable.clear();
    readable_bytes = writable_bytes = 0;
  }
};

}  // namespace xdpvhost::virtio
