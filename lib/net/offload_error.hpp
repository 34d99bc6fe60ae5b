#pragma once
// Why a frame's offload request (virtio-net header) was refused. Every reason
// has a counter name (snake_case) for the port counters that count refusals.

#include <cstddef>
#include <cstdint>

namespace xdpvhost::net {

enum class OffloadError : std::uint8_t {
  none,
  gso_bad_type,             // unknown gso_type, or UFO (3): IP fragmentation is not done
  gso_bad_size,             // gso_size below min_gso_size() (0 included)
  gso_size_too_big,         // a segment's IP packet would exceed the MTU
  gso_too_many_segments,    // payload / gso_size above the policy's bound
  gso_bad_hdr_len,          // hdr_len beyond the frame (or not exact with GUEST_HDRLEN)
  gso_frame_too_long,       // the GSO frame is longer than the policy allows
  gso_ecn_refused,          // ECN bit without HOST_ECN, or on USO
  gso_not_ip,               // no IPv4/IPv6 header behind the Ethernet header
  gso_ip_version_mismatch,  // tcpv4 on IPv6 or tcpv6 on IPv4
  gso_l4_mismatch,          // TSO on a non-TCP packet, USO on a non-UDP one
  gso_length_mismatch,      // the IP length field does not end at the frame's end
  gso_uso_no_csum,          // USO without NEEDS_CSUM (Linux refuses it too)
  ip_fragment,              // an offload request on an IP fragment
  truncated_l2,             // header parsing (packet_headers.hpp) ...
  truncated_l3,
  bad_ip_header,
  bad_ip_length,
  ipv6_ext_unsupported,
  truncated_l4,
  bad_tcp_header,
  headers_too_long,
  csum_bad_start,   // csum_start inside the Ethernet/IP header or past the packet
  csum_bad_offset,  // not the TCP/UDP checksum field, or past the packet
};

inline constexpr std::size_t kOffloadErrorCount =
    static_cast<std::size_t>(OffloadError::csum_bad_offset) + 1;

// "gso_bad_size", "offload_truncated_l4", "csum_bad_start", ...; "none" for
// OffloadError::none.
const char* counter_name(OffloadError e) noexcept;

}  // namespace xdpvhost::net
