#include "net/guest_forward.hpp"

#include "net/internet_checksum.hpp"

namespace xdpvhost::net {
namespace {

bool takes_gso(const GsoRequest& gso, const GuestOffloads& guest) noexcept {
  if (!guest.csum || (gso.ecn && !guest.ecn)) return false;
  switch (gso.type) {
    case GsoType::none:
      return true;
    case GsoType::tcpv4:
      return guest.tso4;
    case GsoType::tcpv6:
      return guest.tso6;
    case GsoType::udp_l4:
      return guest.uso;
  }
  return false;
}

}  // namespace

GuestForward plan_guest_forward(const ByteSpans& frame, const ValidatedOffload& offload,
                                const GuestOffloads& guest) noexcept {
  GuestForward out;
  const OffloadRequest& req = offload.request;
  if (!req.any()) {
    out.frame_len = frame.len;
    return out;
  }
  const FrameLayout& l = offload.layout;
  out.frame_len = l.packet_end;
  if (!req.csum.needed && !offload.is_gso()) return out;
  OffloadRequest to_guest;
  to_guest.csum = req.csum;
  if (offload.is_gso()) {
    if (offload.segments > 1) {
      to_guest.gso = req.gso;
      to_guest.gso.hdr_len = static_cast<std::uint16_t>(l.header_len());
    }
    const std::uint16_t field = l.l4 == L4Kind::tcp ? kTcpChecksumOffset : kUdpChecksumOffset;
    to_guest.csum = ChecksumRequest{true, l.l4_offset, field};
    if (!req.csum.needed) {
      // The sender left the field as it was; put the pseudo-header sum of
      // the whole packet there, as a NEEDS_CSUM sender does.
      std::uint8_t addresses[32];
      const bool v4 = l.l3 == L3Kind::ipv4;
      const std::uint32_t n = v4 ? 8 : 32;
      if (gather(frame, l.l3_offset + (v4 ? 12 : 8), addresses, n) != n) {
        out.segment = true;
        return out;
      }
      const std::uint32_t sum = v4 ? pseudo_header_sum_ipv4(addresses, l.ip_protocol, l.l4_len())
                                   : pseudo_header_sum_ipv6(addresses, l.ip_protocol, l.l4_len());
      out.patch = true;
      out.patch_offset = static_cast<std::uint16_t>(l.l4_offset + field);
      out.patch_value = static_cast<std::uint16_t>(sum);
    }
  }
  if (!takes_gso(to_guest.gso, guest)) {
    out.segment = true;
    return out;
  }
  out.header = encode_virtio_offload(to_guest, false);
  return out;
}

}  // namespace xdpvhost::net
