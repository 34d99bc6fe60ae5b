#include "net/offload_validation.hpp"

namespace xdpvhost::net {
namespace {

std::uint16_t l4_checksum_offset(L4Kind l4) noexcept {
  return l4 == L4Kind::tcp ? kTcpChecksumOffset : kUdpChecksumOffset;
}

OffloadError check_gso_request(const ByteSpans& frame, const GsoRequest& gso,
                               const OffloadPolicy& policy) noexcept {
  if (gso.gso_size < min_gso_size(gso.type)) return OffloadError::gso_bad_size;
  if (gso.ecn && (!policy.ecn || gso.type == GsoType::udp_l4)) return OffloadError::gso_ecn_refused;
  if (frame.len > policy.max_frame_len) return OffloadError::gso_frame_too_long;
  if (gso.hdr_len > frame.len) return OffloadError::gso_bad_hdr_len;
  return OffloadError::none;
}

OffloadError check_gso_layout(const OffloadRequest& req, const FrameLayout& l,
                              const OffloadPolicy& policy, std::uint32_t& segments) noexcept {
  const GsoRequest& gso = req.gso;
  if (l.l3 == L3Kind::none) return OffloadError::gso_not_ip;
  if ((gso.type == GsoType::tcpv4 && l.l3 != L3Kind::ipv4) ||
      (gso.type == GsoType::tcpv6 && l.l3 != L3Kind::ipv6)) {
    return OffloadError::gso_ip_version_mismatch;
  }
  const L4Kind want = gso.type == GsoType::udp_l4 ? L4Kind::udp : L4Kind::tcp;
  if (l.l4 != want) return OffloadError::gso_l4_mismatch;
  if (l.packet_end != l.frame_len) return OffloadError::gso_length_mismatch;
  if (policy.exact_hdr_len && gso.hdr_len != l.header_len()) return OffloadError::gso_bad_hdr_len;
  const std::uint64_t segment_ip =
      std::uint64_t{l.l3_header_len()} + l.l4_header_len + gso.gso_size;
  if (segment_ip > policy.mtu) return OffloadError::gso_size_too_big;
  const std::uint32_t payload = l.payload_len();
  segments = payload == 0 ? 1 : (payload + gso.gso_size - 1) / gso.gso_size;
  if (segments > policy.max_segments) return OffloadError::gso_too_many_segments;
  if (!req.csum.needed) {
    return gso.type == GsoType::udp_l4 ? OffloadError::gso_uso_no_csum : OffloadError::none;
  }
  if (req.csum.start != l.l4_offset) return OffloadError::csum_bad_start;
  if (req.csum.offset != l4_checksum_offset(l.l4)) return OffloadError::csum_bad_offset;
  return OffloadError::none;
}

OffloadError check_checksum_only(const ChecksumRequest& c, const FrameLayout& l) noexcept {
  // Without IP, l4_offset is the end of the Ethernet header.
  if (c.start < l.l4_offset || c.start >= l.packet_end) return OffloadError::csum_bad_start;
  if (std::uint32_t{c.start} + c.offset + 2 > l.packet_end) return OffloadError::csum_bad_offset;
  // An odd offset puts the field across two 16-bit words of the sum: no
  // value stored there makes the checksum verify.
  if (c.offset & 1u) return OffloadError::csum_bad_offset;
  if (c.start == l.l4_offset && l.l4 != L4Kind::none && c.offset != l4_checksum_offset(l.l4)) {
    return OffloadError::csum_bad_offset;
  }
  return OffloadError::none;
}

}  // namespace

OffloadError offload_error_for(ParseError e) noexcept {
  switch (e) {
    case ParseError::none:
      return OffloadError::none;
    case ParseError::truncated_ethernet:
      return OffloadError::truncated_l2;
    case ParseError::truncated_ip:
      return OffloadError::truncated_l3;
    case ParseError::bad_ip_header:
      return OffloadError::bad_ip_header;
    case ParseError::bad_ip_length:
      return OffloadError::bad_ip_length;
    case ParseError::ipv6_ext_unsupported:
      return OffloadError::ipv6_ext_unsupported;
    case ParseError::truncated_l4:
      return OffloadError::truncated_l4;
    case ParseError::bad_tcp_header:
      return OffloadError::bad_tcp_header;
    case ParseError::headers_too_long:
      return OffloadError::headers_too_long;
  }
  return OffloadError::headers_too_long;
}

OffloadCheck validate_offload(const ByteSpans& frame, const OffloadRequest& request,
                              const OffloadPolicy& policy) noexcept {
  OffloadCheck out;
  out.offload.request = request;
  if (!request.any()) return out;
  const bool gso = request.gso.type != GsoType::none;
  if (gso) {
    out.error = check_gso_request(frame, request.gso, policy);
    if (!out.ok()) return out;
  }
  const HeaderBytes head(frame);
  FrameLayout& layout = out.offload.layout;
  out.error = offload_error_for(parse_headers(head, frame.len, layout));
  if (!out.ok()) return out;
  if (layout.ip_fragment) {
    out.error = OffloadError::ip_fragment;
    return out;
  }
  out.error = gso ? check_gso_layout(request, layout, policy, out.offload.segments)
                  : check_checksum_only(request.csum, layout);
  return out;
}

}  // namespace xdpvhost::net
