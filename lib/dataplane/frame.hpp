#pragma once
// A frame in flight through the switch: the bytes of one Ethernet frame,
// possibly scattered over guest buffers or UMEM frames, and the offloads its
// sender asked for (segmentation, a checksum left unfinished), already
// validated against the frame's headers by the port that took it in.

#include <cstdint>
#include <cstring>

#include "net/byte_spans.hpp"
#include "net/ethernet.hpp"
#include "net/mac_address.hpp"
#include "net/offload_validation.hpp"

namespace xdpvhost::dataplane {

using Span = net::ByteSpan;

struct Frame {
  const Span* spans = nullptr;
  std::uint32_t span_count = 0;
  std::uint32_t len = 0;
  // GSO and NEEDS_CSUM as the sender asked, with the parsed layout; nothing
  // asked (the default) for frames from the uplink.
  net::ValidatedOffload offload;
  // Every checksum of the frame was verified (GRO): a guest may be told
  // DATA_VALID.
  bool data_valid = false;
  // The Ethernet header, contiguous (valid when has_ethernet_header()).
  std::uint8_t eth[net::kEthernetHeader] = {};
  // The flow's hash (flow_hash.hpp) once it was asked for: where a spread
  // guest's queue group is chosen (the forwarder) and where its RX queue is
  // (the guest port), one hash serves both; the mailbox carries it across
  // threads. Set by flow_hash() only.
  mutable std::uint32_t flow_hash_value = 0;
  mutable bool flow_hash_known = false;

  Frame() = default;
  // A frame over one contiguous buffer; `span` must outlive the frame. The
  // Ethernet header is loaded when the frame is long enough to hold one.
  explicit Frame(const Span& span, const net::ValidatedOffload& o = {}) noexcept;

  bool has_ethernet_header() const noexcept { return len >= net::kEthernetHeader; }
  net::MacAddress dst() const noexcept { return net::MacAddress::from(eth); }
  net::MacAddress src() const noexcept { return net::MacAddress::from(eth + 6); }
  bool is_multicast() const noexcept { return (eth[0] & 1) != 0; }
  // Segmentation or a checksum to finish: not a plain copy.
  bool needs_offload() const noexcept { return offload.request.any(); }
  // The longest frame it becomes where it is cut into segments: the first
  // segment (headers and gso_size), or the frame itself without GSO.
  std::uint32_t longest_segment() const noexcept {
    if (!offload.is_gso()) return len;
    const std::uint32_t first =
        offload.layout.header_len() + std::uint32_t{offload.request.gso.gso_size};
    return first < len ? first : len;
  }
  net::ByteSpans bytes() const noexcept {
    net::ByteSpans b;
    b.spans = spans;
    b.count = span_count;
    b.len = len;
    return b;
  }
};

// Copies `len` bytes starting at `offset` of the frame into `out`; returns
// the bytes copied.
inline std::uint32_t gather(const Frame& frame, std::uint32_t offset, std::uint8_t* out,
                            std::uint32_t len) noexcept {
  return net::gather(frame.bytes(), offset, out, len);
}

// Fills frame.eth from the spans; false if the frame is shorter than that.
bool load_ethernet_header(Frame& frame) noexcept;

}  // namespace xdpvhost::dataplane
