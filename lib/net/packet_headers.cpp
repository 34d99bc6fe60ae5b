#include "net/packet_headers.hpp"

#include "net/byte_order.hpp"
#include "sys/enum_names.hpp"

namespace xdpvhost::net {
namespace {

constexpr std::uint8_t kIpv6HopByHop = 0;
constexpr std::uint8_t kIpv6Routing = 43;
constexpr std::uint8_t kIpv6Fragment = 44;
constexpr std::uint8_t kIpv6Ah = 51;
constexpr std::uint8_t kIpv6DestOptions = 60;

// Every read of the parser goes through need(): the bytes must lie inside
// the frame (else `truncated`) and inside the bytes given.
struct Reader {
  const std::uint8_t* head;
  std::uint32_t head_len;
  std::uint32_t frame_len;

  ParseError need(std::uint32_t end, ParseError truncated) const noexcept {
    if (end > frame_len) return truncated;
    if (end > head_len) return ParseError::headers_too_long;
    return ParseError::none;
  }
};

ParseError parse_l4(const Reader& r, FrameLayout& out) noexcept {
  if (out.ip_fragment) return ParseError::none;
  const std::uint32_t l4 = out.l4_offset;
  if (out.ip_protocol == kIpProtoTcp) {
    if (l4 + kTcpMinHeader > out.packet_end) return ParseError::truncated_l4;
    if (auto e = r.need(l4 + kTcpMinHeader, ParseError::truncated_l4); e != ParseError::none) {
      return e;
    }
    const std::uint32_t doff = static_cast<std::uint32_t>(r.head[l4 + 12] >> 4) * 4;
    if (doff < kTcpMinHeader) return ParseError::bad_tcp_header;
    if (l4 + doff > out.packet_end) return ParseError::truncated_l4;
    if (auto e = r.need(l4 + doff, ParseError::truncated_l4); e != ParseError::none) return e;
    out.l4 = L4Kind::tcp;
    out.l4_header_len = static_cast<std::uint16_t>(doff);
  } else if (out.ip_protocol == kIpProtoUdp) {
    if (l4 + kUdpHeader > out.packet_end) return ParseError::truncated_l4;
    if (auto e = r.need(l4 + kUdpHeader, ParseError::truncated_l4); e != ParseError::none) {
      return e;
    }
    out.l4 = L4Kind::udp;
    out.l4_header_len = kUdpHeader;
  }
  return ParseError::none;
}

ParseError parse_ipv4(const Reader& r, FrameLayout& out) noexcept {
  const std::uint32_t l3 = out.l3_offset;
  if (auto e = r.need(l3 + kIpv4MinHeader, ParseError::truncated_ip); e != ParseError::none) {
    return e;
  }
  const std::uint8_t* ip = r.head + l3;
  const std::uint32_t ihl = std::uint32_t{ip[0] & 0x0fu} * 4;
  if ((ip[0] >> 4) != 4 || ihl < kIpv4MinHeader) return ParseError::bad_ip_header;
  if (auto e = r.need(l3 + ihl, ParseError::truncated_ip); e != ParseError::none) return e;
  const std::uint32_t total = load_be16(ip + 2);
  if (total < ihl || l3 + total > r.frame_len) return ParseError::bad_ip_length;
  out.l3 = L3Kind::ipv4;
  out.packet_end = l3 + total;
  out.ip_protocol = ip[9];
  out.ip_fragment = (load_be16(ip + 6) & 0x3fff) != 0;  // MF or a fragment offset
  out.l4_offset = static_cast<std::uint16_t>(l3 + ihl);
  return parse_l4(r, out);
}

ParseError parse_ipv6(const Reader& r, FrameLayout& out) noexcept {
  const std::uint32_t l3 = out.l3_offset;
  if (auto e = r.need(l3 + kIpv6Header, ParseError::truncated_ip); e != ParseError::none) {
    return e;
  }
  const std::uint8_t* ip = r.head + l3;
  if ((ip[0] >> 4) != 6) return ParseError::bad_ip_header;
  const std::uint32_t end = l3 + kIpv6Header + load_be16(ip + 4);
  if (end > r.frame_len) return ParseError::bad_ip_length;
  out.l3 = L3Kind::ipv6;
  out.packet_end = end;
  std::uint8_t next = ip[6];
  std::uint32_t off = l3 + kIpv6Header;
  bool seen_dest_options = false;
  for (bool first = true;; first = false) {
    if (next == kIpv6HopByHop && !first) return ParseError::ipv6_ext_unsupported;
    if (next == kIpv6DestOptions && seen_dest_options) return ParseError::ipv6_ext_unsupported;
    if (next == kIpv6Routing || next == kIpv6Ah) return ParseError::ipv6_ext_unsupported;
    if (next == kIpv6Fragment) {
      out.ip_fragment = true;
      break;
    }
    if (next != kIpv6HopByHop && next != kIpv6DestOptions) break;
    seen_dest_options = seen_dest_options || next == kIpv6DestOptions;
    if (off + 8 > end) return ParseError::truncated_ip;
    if (auto e = r.need(off + 8, ParseError::truncated_ip); e != ParseError::none) return e;
    const std::uint32_t len = (std::uint32_t{r.head[off + 1]} + 1) * 8;
    if (off + len > end) return ParseError::truncated_ip;
    if (auto e = r.need(off + len, ParseError::truncated_ip); e != ParseError::none) return e;
    next = r.head[off];
    off += len;
  }
  out.ip_protocol = next;
  out.l4_offset = static_cast<std::uint16_t>(off);
  return parse_l4(r, out);
}

ParseError parse_frame(const std::uint8_t* head, std::uint32_t head_len, std::uint32_t frame_len,
                       FrameLayout& out) noexcept {
  out.frame_len = frame_len;
  out.packet_end = frame_len;
  if (head_len > frame_len) head_len = frame_len;
  const Reader r{head, head_len, frame_len};
  if (auto e = r.need(kEthernetHeader, ParseError::truncated_ethernet); e != ParseError::none) {
    return e;
  }
  std::uint32_t l3 = kEthernetHeader;
  std::uint16_t type = load_be16(head + 12);
  if (type == kEtherTypeVlan || type == kEtherTypeQinQ) {
    if (auto e = r.need(kEthernetHeader + kVlanTag, ParseError::truncated_ethernet);
        e != ParseError::none) {
      return e;
    }
    out.vlan_tpid = type;
    type = load_be16(head + 16);
    l3 += kVlanTag;
  }
  out.ethertype = type;
  out.l3_offset = static_cast<std::uint16_t>(l3);
  out.l4_offset = out.l3_offset;
  if (type == kEtherTypeIpv4) return parse_ipv4(r, out);
  if (type == kEtherTypeIpv6) return parse_ipv6(r, out);
  return ParseError::none;
}

}  // namespace

ParseError parse_headers(const std::uint8_t* head, std::uint32_t head_len, std::uint32_t frame_len,
                         FrameLayout& out) noexcept {
  out = FrameLayout{};
  const ParseError e = parse_frame(head, head_len, frame_len, out);
  if (e == ParseError::none && out.header_len() > kMaxHeaderBytes) {
    return ParseError::headers_too_long;
  }
  return e;
}

HeaderBytes::HeaderBytes(const ByteSpans& frame) noexcept {
  const std::uint32_t want = frame.len < kMaxHeaderBytes ? frame.len : kMaxHeaderBytes;
  if (frame.count > 0 && frame.spans[0].len >= want) {
    data_ = frame.spans[0].data;
    len_ = want;
  } else {
    len_ = gather(frame, 0, copy_, want);
  }
}

namespace {

constexpr sys::EnumNames<ParseError, 9> kParseErrorNames{{
    {ParseError::none, "none"},
    {ParseError::truncated_ethernet, "truncated_ethernet"},
    {ParseError::truncated_ip, "truncated_ip"},
    {ParseError::bad_ip_header, "bad_ip_header"},
    {ParseError::bad_ip_length, "bad_ip_length"},
    {ParseError::ipv6_ext_unsupported, "ipv6_ext_unsupported"},
    {ParseError::truncated_l4, "truncated_l4"},
    {ParseError::bad_tcp_header, "bad_tcp_header"},
    {ParseError::headers_too_long, "headers_too_long"},
}};
static_assert(sys::in_enum_order(kParseErrorNames,
                                 static_cast<std::size_t>(ParseError::headers_too_long) + 1));

}  // namespace

const char* parse_error_name(ParseError e) noexcept {
  return sys::name_of(kParseErrorNames, e);
}

}  // namespace xdpvhost::net
