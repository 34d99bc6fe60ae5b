#include "frontend/frame_checksum.hpp"

namespace xdpvhost::testing {
namespace {

constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeVlan = 0x8100;
constexpr std::uint8_t kProtoIcmp = 1;
constexpr std::uint8_t kProtoTcp = 6;
constexpr std::uint8_t kProtoUdp = 17;

std::uint16_t be16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}
void put_be16(std::uint8_t* p, std::uint16_t v) {
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

// Where the IPv4 packet inside an Ethernet frame is.
struct Ipv4Layout {
  std::size_t l3 = 0;      // offset of the IPv4 header
  std::size_t ihl = 0;     // header bytes
  std::size_t l4 = 0;      // offset of the L4 header
  std::size_t l4_len = 0;  // L4 bytes per the IPv4 total length
  std::uint8_t protocol = 0;
  bool fragment = false;
};

std::optional<Ipv4Layout> parse_ipv4(std::span<const std::uint8_t> f, std::string* problem) {
  if (f.size() < 14) {
    if (problem) *problem = "frame shorter than an Ethernet header";
    return std::nullopt;
  }
  std::size_t l3 = 14;
  std::uint16_t type = be16(&f[12]);
  if (type == kEtherTypeVlan) {
    if (f.size() < 18) {
      if (problem) *problem = "truncated VLAN tag";
      return std::nullopt;
    }
    type = be16(&f[16]);
    l3 = 18;
  }
  if (type != kEtherTypeIpv4) return std::nullopt;
  if (f.size() < l3 + 20) {
    if (problem) *problem = "truncated IPv4 header";
    return std::nullopt;
  }
  Ipv4Layout l;
  l.l3 = l3;
  l.ihl = static_cast<std::size_t>(f[l3] & 0x0f) * 4;
  const std::size_t total = be16(&f[l3 + 2]);
  if ((f[l3] >> 4) != 4 || l.ihl < 20 || total < l.ihl || f.size() < l3 + total) {
    if (problem) *problem = "bad IPv4 version, header length or total length";
    return std::nullopt;
  }
  l.l4 = l3 + l.ihl;
  l.l4_len = total - l.ihl;
  l.protocol = f[l3 + 9];
  const std::uint16_t frag = be16(&f[l3 + 6]);
  l.fragment = (frag & 0x3fff) != 0;  // MF set or offset non-zero
  return l;
}

std::uint32_t pseudo_header_sum(std::span<const std::uint8_t> f, const Ipv4Layout& l) {
  std::uint32_t sum = checksum_partial(f.subspan(l.l3 + 12, 8));  // source + destination
  sum += l.protocol;
  sum += static_cast<std::uint32_t>(l.l4_len);
  return sum;
}

}  // namespace

std::uint32_t checksum_partial(std::span<const std::uint8_t> bytes, std::uint32_t sum) {
  std::uint64_t acc = sum;
  std::size_t i = 0;
  for (; i + 1 < bytes.size(); i += 2)
    acc += static_cast<std::uint32_t>((bytes[i] << 8) | bytes[i + 1]);
  if (i < bytes.size()) acc += static_cast<std::uint32_t>(bytes[i] << 8);
  while (acc >> 32) acc = (acc & 0xffffffffu) + (acc >> 32);
  return static_cast<std::uint32_t>(acc);
}

std::uint16_t checksum_finish(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
}

std::uint16_t internet_checksum(std::span<const std::uint8_t> bytes, std::uint32_t sum) {
  return checksum_finish(checksum_partial(bytes, sum));
}

ChecksumReport verify_checksums(std::span<const std::uint8_t> frame) {
  ChecksumReport r;
  std::string problem;
  const auto layout = parse_ipv4(frame, &problem);
  if (!layout) {
    r.problem = problem;
    r.l4_ok = problem.empty();
    return r;
  }
  r.is_ipv4 = true;
  r.l4_protocol = layout->protocol;
  r.ipv4_header_ok = internet_checksum(frame.subspan(layout->l3, layout->ihl)) == 0;
  if (!r.ipv4_header_ok) r.problem = "bad IPv4 header checksum";
  if (layout->fragment) {
    r.l4_ok = true;  // only the first fragment carries the L4 header; not checked
    return r;
  }
  const auto l4 = frame.subspan(layout->l4, layout->l4_len);
  switch (layout->protocol) {
    case kProtoUdp:
      if (l4.size() < 8) {
        r.problem = "truncated UDP header";
        return r;
      }
      if (be16(&l4[6]) == 0) {
        r.udp_checksum_absent = true;
        r.l4_ok = true;
        return r;
      }
      r.l4_ok = checksum_finish(checksum_partial(l4, pseudo_header_sum(frame, *layout))) == 0;
      break;
    case kProtoTcp:
      if (l4.size() < 20) {
        r.problem = "truncated TCP header";
        return r;
      }
      r.l4_ok = checksum_finish(checksum_partial(l4, pseudo_header_sum(frame, *layout))) == 0;
      break;
    case kProtoIcmp:
      if (l4.size() < 8) {
        r.problem = "truncated ICMP header";
        return r;
      }
      r.l4_ok = internet_checksum(l4) == 0;
      break;
    default:
      r.l4_ok = true;
      return r;
  }
  if (!r.l4_ok && r.problem.empty()) {
    r.problem = layout->protocol == kProtoUdp   ? "bad UDP checksum"
                : layout->protocol == kProtoTcp ? "bad TCP checksum"
                                                : "bad ICMP checksum";
  }
  return r;
}

std::optional<virtio::NetHeader> make_checksum_partial(std::span<std::uint8_t> frame) {
  const auto layout = parse_ipv4(frame, nullptr);
  if (!layout || layout->fragment) return std::nullopt;
  std::uint16_t offset;
  if (layout->protocol == kProtoUdp && layout->l4_len >= 8) {
    offset = 6;
  } else if (layout->protocol == kProtoTcp && layout->l4_len >= 20) {
    offset = 16;
  } else {
    return std::nullopt;
  }
  // The field holds the folded pseudo-header sum, not inverted (Linux
  // CHECKSUM_PARTIAL); the device adds the rest and inverts.
  std::uint32_t sum = pseudo_header_sum(frame, *layout);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  put_be16(&frame[layout->l4 + offset], static_cast<std::uint16_t>(sum));
  virtio::NetHeader h{};
  h.flags = virtio::NetHeader::kFlagNeedsCsum;
  h.gso_type = virtio::NetHeader::kGsoNone;
  h.csum_start = static_cast<std::uint16_t>(layout->l4);
  h.csum_offset = offset;
  return h;
}

bool complete_partial_checksum(std::span<std::uint8_t> frame, std::uint16_t csum_start,
                               std::uint16_t csum_offset) {
  if (csum_start >= frame.size() || std::size_t{csum_start} + csum_offset + 2 > frame.size()) {
    return false;
  }
  std::uint16_t c = internet_checksum(frame.subspan(csum_start));
  // A computed 0 is sent as 0xffff (0 means "no checksum" for UDP), as Linux does.
  if (c == 0) c = 0xffff;
  put_be16(&frame[std::size_t{csum_start} + csum_offset], c);
  return true;
}

}  // namespace xdpvhost::testing
