#pragma once
// A frame in flight through the switch: the bytes of one Ethernet frame,
// possibly scattered over guest buffers, and the checksum-offload state the
// sender's virtio-net header carried.

#include <cstdint>
#include <cstring>

#include "dataplane/mac_address.hpp"
#include "virtio/guest_memory.hpp"

namespace xdpvhost::dataplane {

using Span = virtio::HostSpan;

struct Frame {
  static constexpr std::uint32_t kEthernetHeader = 14;

  const Span* spans = nullptr;
  std::uint32_t span_count = 0;
  std::uint32_t len = 0;
  // virtio-net header state: NEEDS_CSUM means the L4 checksum at
  // csum_start + csum_offset holds only the pseudo-header sum.
  bool needs_csum = false;
  std::uint16_t csum_start = 0;
  std::uint16_t csum_offset = 0;
  // The Ethernet header, contiguous.
  std::uint8_t eth[kEthernetHeader] = {};

  MacAddress dst() const noexcept { return MacAddress::from(eth); }
  MacAddress src() const noexcept { return MacAddress::from(eth + 6); }
  bool is_multicast() const noexcept { return (eth[0] & 1) != 0; }
};

// Copies `len` bytes starting at `offset` of the frame into `out`; returns
// the bytes copied.
std::uint32_t gather(const Frame& frame, std::uint32_t offset, std::uint8_t* out,
                     std::uint32_t len) noexcept;

// Fills frame.eth from the spans; false if the frame is shorter than that.
bool load_ethernet_header(Frame& frame) noexcept;

}  // namespace xdpvhost::dataplane
