#pragma once
// Guest -> guest: what a validated frame from one guest becomes for another
// guest, given the offloads the receiving guest negotiated. A GSO frame goes
// through unchanged (one frame, no segmentation, no checksum) when the
// receiver takes that GSO type; otherwise it is segmented in software.

#include <cstdint>

#include "net/byte_spans.hpp"
#include "net/offload_validation.hpp"
#include "net/virtio_net_offload.hpp"

namespace xdpvhost::net {

// The receiving guest's features: GUEST_CSUM, GUEST_TSO4, GUEST_TSO6,
// GUEST_ECN, GUEST_USO4/6.
struct GuestOffloads {
  bool csum = false;
  bool tso4 = false;
  bool tso6 = false;
  bool ecn = false;
  bool uso = false;
};

struct GuestForward {
  // The receiver cannot take the frame as it is: segment() it with
  // ChecksumMode::software and deliver each segment with a zero header.
  bool segment = false;
  // Otherwise: copy the frame unchanged (up to its IP packet's end,
  // `frame_len`) with this virtio-net header ...
  VirtioNetOffload header;
  std::uint32_t frame_len = 0;
  // ... and, when patch is set, store patch_value (big endian) at
  // patch_offset of the copy: the pseudo-header sum a GSO frame sent
  // without NEEDS_CSUM does not carry.
  bool patch = false;
  std::uint16_t patch_offset = 0;
  std::uint16_t patch_value = 0;
};

// A GSO frame that fits one segment goes as a plain NEEDS_CSUM frame (as
// Linux treats it). The receiver gets hdr_len = the parsed headers.
GuestForward plan_guest_forward(const ByteSpans& frame, const ValidatedOffload& offload,
                                const GuestOffloads& guest) noexcept;

}  // namespace xdpvhost::net
