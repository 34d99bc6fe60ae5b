#pragma once
// A frame in flight through the switch: the bytes of one Ethernet frame,
// possibly scattered over guest buffers, and the offloads the sender's
// virtio-net header asked for.

#include <cstdint>
#include <cstring>

#include "net/ethernet.hpp"
#include "net/mac_address.hpp"
#include "virtio/guest_memory.hpp"

namespace xdpvhost::dataplane {

using Span = virtio::HostSpan;

// The L4 checksum the sender left to the "NIC" (virtio-net NEEDS_CSUM): the
// 16-bit field at start + offset holds only the pseudo-header sum.
struct ChecksumRequest {
  bool needed = false;
  std::uint16_t start = 0;
  std::uint16_t offset = 0;
};

// What the sender's virtio-net header asks of the switch for this frame; it
// travels with the frame (mailboxes, the backlog) to whoever delivers it.
struct Offload {
  ChecksumRequest csum;
};

struct Frame {
  const Span* spans = nullptr;
  std::uint32_t span_count = 0;
  std::uint32_t len = 0;
  Offload offload;
  // The Ethernet header, contiguous (valid when has_ethernet_header()).
  std::uint8_t eth[net::kEthernetHeader] = {};

  Frame() = default;
  // A frame over one contiguous buffer; `span` must outlive the frame. The
  // Ethernet header is loaded when the frame is long enough to hold one.
  explicit Frame(const Span& span, Offload o = {}) noexcept;

  bool has_ethernet_header() const noexcept { return len >= net::kEthernetHeader; }
  net::MacAddress dst() const noexcept { return net::MacAddress::from(eth); }
  net::MacAddress src() const noexcept { return net::MacAddress::from(eth + 6); }
  bool is_multicast() const noexcept { return (eth[0] & 1) != 0; }
};

// Copies `len` bytes starting at `offset` of the frame into `out`; returns
// the bytes copied.
std::uint32_t gather(const Frame& frame, std::uint32_t offset, std::uint8_t* out,
                     std::uint32_t len) noexcept;

// Fills frame.eth from the spans; false if the frame is shorter than that.
bool load_ethernet_header(Frame& frame) noexcept;

}  // namespace xdpvhost::dataplane
