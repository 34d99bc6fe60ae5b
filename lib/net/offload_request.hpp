#pragma once
// What a sender asks of the device for one frame: segmentation (GSO) and a
// checksum it left unfinished. The fields are those of the virtio-net header
// (virtio 1.2 section 5.1.6), decoded (virtio_net_offload.hpp).

#include <cstdint>

namespace xdpvhost::net {

enum class GsoType : std::uint8_t {
  none,
  tcpv4,   // TSO over IPv4
  tcpv6,   // TSO over IPv6
  udp_l4,  // USO: UDP datagrams of gso_size payload each, over IPv4 or IPv6
};

struct GsoRequest {
  GsoType type = GsoType::none;
  bool ecn = false;            // the TCP header carries CWR (HOST_ECN / GUEST_ECN)
  std::uint16_t gso_size = 0;  // payload bytes per segment (the MSS)
  std::uint16_t hdr_len = 0;   // a hint from Linux guests; see offload_validation.hpp
};

// NEEDS_CSUM: the 16-bit field at start + offset holds the pseudo-header sum
// and the device finishes the ones-complement sum from start to the end of
// the packet.
struct ChecksumRequest {
  bool needed = false;
  std::uint16_t start = 0;
  std::uint16_t offset = 0;
};

struct OffloadRequest {
  GsoRequest gso;
  ChecksumRequest csum;

  bool any() const noexcept { return gso.type != GsoType::none || csum.needed; }
};

}  // namespace xdpvhost::net
