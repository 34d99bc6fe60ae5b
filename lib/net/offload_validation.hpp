#pragma once
// Checks a sender's offload request (its virtio-net header) against the
// frame's real headers and length before anything trusts it.
//
// Rules, in the order they are checked (first failure wins):
//  - No GSO and no NEEDS_CSUM: accepted without parsing.
//  - GSO: gso_size at least min_gso_size() (a frame of one-byte segments
//    would make a short descriptor hundreds of packets on the wire); the
//    ECN bit only if the policy allows it (HOST_ECN)
//    and never on USO; the frame at most policy.max_frame_len.
//  - hdr_len (GSO frames only) must not pass the frame's end. It is not
//    otherwise trusted: Linux guests send skb_headlen() there, a hint that
//    may be larger or smaller than the headers (virtio 1.2: without
//    VIRTIO_NET_F_GUEST_HDRLEN the device must not rely on it), so the
//    headers are parsed and the parsed length used. With
//    policy.exact_hdr_len (GUEST_HDRLEN negotiated) it must equal L2+L3+L4.
//  - The headers parse (packet_headers.hpp); no IP fragment.
//  - GSO: IPv4 or IPv6 (gso_not_ip), tcpv4 on IPv4 and tcpv6 on IPv6, TCP
//    for TSO and UDP for USO, the IP length field ending exactly at the
//    frame's end, L3 + L4 headers + gso_size <= policy.mtu, at most
//    policy.max_segments segments. USO needs NEEDS_CSUM (as in Linux). A
//    GSO frame whose payload fits one segment is valid (one segment).
//  - NEEDS_CSUM on a GSO frame: csum_start is the TCP/UDP header and
//    csum_offset its checksum field (16 / 6). Without NEEDS_CSUM a TSO
//    frame is accepted: segmentation computes every checksum from scratch.
//  - NEEDS_CSUM alone: csum_start not inside the Ethernet header or the IP
//    header (options and extension headers included) and before the
//    packet's end; the field (start + offset + 2) inside the packet and at
//    an even offset (else no stored value can make the sum verify); at the
//    TCP/UDP header, offset 16 / 6. A start past the L4 header (an
//    encapsulated packet: Linux's virtio-net advertises NETIF_F_HW_CSUM, so
//    a guest's VXLAN/GRE traffic asks for the inner checksum) is only
//    range-checked.

#include <cstdint>

#include "net/byte_spans.hpp"
#include "net/ethernet.hpp"
#include "net/offload_error.hpp"
#include "net/offload_request.hpp"
#include "net/packet_headers.hpp"

namespace xdpvhost::net {

// The smallest gso_size a sender may ask for: TCP over IPv4 48 (Linux's
// tcp_min_snd_mss), TCP over IPv6 88, UDP 8 (as Linux enforces them).
constexpr std::uint16_t min_gso_size(GsoType type) noexcept {
  switch (type) {
    case GsoType::tcpv4:
      return 48;
    case GsoType::tcpv6:
      return 88;
    case GsoType::udp_l4:
      return 8;
    case GsoType::none:
      break;
  }
  return 1;
}

struct OffloadPolicy {
  std::uint32_t mtu = 1500;  // the sender's MTU: bounds each segment's IP packet
  // 64 KiB at an MSS of 256. A path-MTU floor of 552 gives MSS 512 (500 with
  // timestamps): 130 segments of a 64 KiB frame, which Linux guests send.
  // Smaller MSS (Linux's tcp_min_snd_mss is 48) only for a peer that asks.
  std::uint32_t max_segments = 256;
  std::uint32_t max_frame_len = kMaxGsoFrame;
  bool ecn = true;             // HOST_ECN negotiated
  bool exact_hdr_len = false;  // GUEST_HDRLEN negotiated
};

// A request that passed validation, with the frame's parsed layout (layout
// is left empty when the request asks for nothing).
struct ValidatedOffload {
  OffloadRequest request;
  FrameLayout layout;
  std::uint32_t segments = 1;  // what segmentation makes of it

  bool is_gso() const noexcept { return request.gso.type != GsoType::none; }
};

struct OffloadCheck {
  OffloadError error = OffloadError::none;
  ValidatedOffload offload;

  bool ok() const noexcept { return error == OffloadError::none; }
};

OffloadCheck validate_offload(const ByteSpans& frame, const OffloadRequest& request,
                              const OffloadPolicy& policy) noexcept;

// The refusal a header parse error stands for.
OffloadError offload_error_for(ParseError e) noexcept;

}  // namespace xdpvhost::net
