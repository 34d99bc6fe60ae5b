#include "net/virtio_net_offload.hpp"

namespace xdpvhost::net {

OffloadError decode_virtio_offload(const VirtioNetOffload& hdr, OffloadRequest& out) noexcept {
  out = OffloadRequest{};
  if (hdr.flags & kVirtioNetNeedsCsum) {
    out.csum = ChecksumRequest{true, hdr.csum_start, hdr.csum_offset};
  }
  if (hdr.gso_type == kVirtioGsoNone) return OffloadError::none;
  switch (hdr.gso_type & ~kVirtioGsoEcn) {
    case kVirtioGsoTcpv4:
      out.gso.type = GsoType::tcpv4;
      break;
    case kVirtioGsoTcpv6:
      out.gso.type = GsoType::tcpv6;
      break;
    case kVirtioGsoUdpL4:
      out.gso.type = GsoType::udp_l4;
      break;
    default:
      return OffloadError::gso_bad_type;
  }
  out.gso.ecn = (hdr.gso_type & kVirtioGsoEcn) != 0;
  out.gso.gso_size = hdr.gso_size;
  out.gso.hdr_len = hdr.hdr_len;
  return OffloadError::none;
}

VirtioNetOffload encode_virtio_offload(const OffloadRequest& request, bool data_valid) noexcept {
  VirtioNetOffload h;
  if (request.csum.needed) {
    h.flags = kVirtioNetNeedsCsum;
    h.csum_start = request.csum.start;
    h.csum_offset = request.csum.offset;
  } else if (data_valid) {
    h.flags = kVirtioNetDataValid;
  }
  switch (request.gso.type) {
    case GsoType::none:
      return h;
    case GsoType::tcpv4:
      h.gso_type = kVirtioGsoTcpv4;
      break;
    case GsoType::tcpv6:
      h.gso_type = kVirtioGsoTcpv6;
      break;
    case GsoType::udp_l4:
      h.gso_type = kVirtioGsoUdpL4;
      break;
  }
  if (request.gso.ecn) h.gso_type |= kVirtioGsoEcn;
  h.gso_size = request.gso.gso_size;
  h.hdr_len = request.gso.hdr_len;
  return h;
}

}  // namespace xdpvhost::net
