#pragma once
// The offload fields of a virtio-net header (virtio 1.2 section 5.1.6) in
// host byte order, as lib/virtio's NetHeader holds them, and their meaning
// as an OffloadRequest. lib/net does not depend on lib/virtio: the datapath
// copies the six fields across.

#include <cstdint>

#include "net/offload_error.hpp"
#include "net/offload_request.hpp"

namespace xdpvhost::net {

inline constexpr std::uint8_t kVirtioNetNeedsCsum = 1;  // VIRTIO_NET_HDR_F_NEEDS_CSUM
inline constexpr std::uint8_t kVirtioNetDataValid = 2;  // VIRTIO_NET_HDR_F_DATA_VALID
inline constexpr std::uint8_t kVirtioGsoNone = 0;
inline constexpr std::uint8_t kVirtioGsoTcpv4 = 1;
inline constexpr std::uint8_t kVirtioGsoUdp = 3;  // UFO, not supported
inline constexpr std::uint8_t kVirtioGsoTcpv6 = 4;
inline constexpr std::uint8_t kVirtioGsoUdpL4 = 5;
inline constexpr std::uint8_t kVirtioGsoEcn = 0x80;

struct VirtioNetOffload {
  std::uint8_t flags = 0;
  std::uint8_t gso_type = kVirtioGsoNone;
  std::uint16_t hdr_len = 0;
  std::uint16_t gso_size = 0;
  std::uint16_t csum_start = 0;
  std::uint16_t csum_offset = 0;
};

// A guest's (transmit) header as a request. Refuses unknown gso_type values
// and UFO with gso_bad_type. Flag bits other than NEEDS_CSUM are ignored (a
// device must ignore flags it does not know; DATA_VALID is not the driver's
// to set). gso_size and hdr_len of a non-GSO frame are ignored.
OffloadError decode_virtio_offload(const VirtioNetOffload& hdr, OffloadRequest& out) noexcept;

// The header for a frame delivered to a guest: GSO fields, NEEDS_CSUM with
// csum_start/offset, or DATA_VALID when `data_valid` and no checksum is
// left to the guest.
VirtioNetOffload encode_virtio_offload(const OffloadRequest& request, bool data_valid) noexcept;

}  // namespace xdpvhost::net
