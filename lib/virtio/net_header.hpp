#pragma once
// The virtio-net header that precedes every frame on a virtio-net queue.

#include <cstddef>
#include <cstdint>

#include "virtio/features.hpp"

namespace xdpvhost::virtio {

struct NetHeader {
  static constexpr std::uint8_t kFlagNeedsCsum = 1;
  static constexpr std::uint8_t kFlagDataValid = 2;
  static constexpr std::uint8_t kGsoNone = 0;
  static constexpr std::uint8_t kGsoTcpv4 = 1;
  static constexpr std::uint8_t kGsoUdp = 3;  // UFO: never offered
  static constexpr std::uint8_t kGsoTcpv6 = 4;
  static constexpr std::uint8_t kGsoUdpL4 = 5;  // USO
  static constexpr std::uint8_t kGsoEcn = 0x80;

  std::uint8_t flags;
  std::uint8_t gso_type;
  std::uint16_t hdr_len;
  std::uint16_t gso_size;
  std::uint16_t csum_start;
  std::uint16_t csum_offset;
  std::uint16_t num_buffers;  // present with VERSION_1 or MRG_RXBUF
};
static_assert(sizeof(NetHeader) == 12);

// The header is 12 bytes with VERSION_1 or MRG_RXBUF, 10 bytes otherwise.
constexpr std::size_t net_header_size(std::uint64_t features) {
  return (has(features, Feature::kVersion1) || has(features, Feature::kNetMrgRxbuf)) ? 12 : 10;
}

}  // namespace xdpvhost::virtio
