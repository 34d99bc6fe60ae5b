#pragma once
// Where the L2, L3 and L4 headers of an Ethernet frame are, parsed from its
// first bytes with every length checked against the frame.
//
// Understood: Ethernet with at most one 802.1Q or 802.1ad tag; IPv4 with
// options; IPv6 with at most a hop-by-hop options header (first) and one
// destination options header; TCP with options; UDP. A fragment (IPv4 MF or
// offset, IPv6 fragment header) has no L4 header here. Refused as
// ipv6_ext_unsupported: routing headers (the pseudo-header would need the
// final destination), AH, a repeated or misplaced options header.
// Anything else (ARP, ICMP, ESP, GRE, ...) parses with l3 or l4 none.

#include <cstdint>

#include "net/byte_spans.hpp"
#include "net/ethernet.hpp"

namespace xdpvhost::net {

inline constexpr std::uint8_t kIpProtoTcp = 6;
inline constexpr std::uint8_t kIpProtoUdp = 17;
inline constexpr std::uint32_t kIpv4MinHeader = 20;
inline constexpr std::uint32_t kIpv6Header = 40;
inline constexpr std::uint32_t kTcpMinHeader = 20;
inline constexpr std::uint32_t kUdpHeader = 8;
inline constexpr std::uint16_t kTcpChecksumOffset = 16;
inline constexpr std::uint16_t kUdpChecksumOffset = 6;
// The longest L2+L3+L4 header lib/net handles: VLAN-tagged Ethernet, IPv4
// with 40 option bytes or IPv6 with extension headers, TCP with 40 option
// bytes fit easily.
inline constexpr std::uint32_t kMaxHeaderBytes = 256;

// TCP flags (byte 13 of the TCP header).
inline constexpr std::uint8_t kTcpFin = 0x01;
inline constexpr std::uint8_t kTcpSyn = 0x02;
inline constexpr std::uint8_t kTcpRst = 0x04;
inline constexpr std::uint8_t kTcpPsh = 0x08;
inline constexpr std::uint8_t kTcpAck = 0x10;
inline constexpr std::uint8_t kTcpUrg = 0x20;
inline constexpr std::uint8_t kTcpEce = 0x40;
inline constexpr std::uint8_t kTcpCwr = 0x80;

enum class L3Kind : std::uint8_t { none, ipv4, ipv6 };
enum class L4Kind : std::uint8_t { none, tcp, udp };

struct FrameLayout {
  std::uint32_t frame_len = 0;
  std::uint16_t vlan_tpid = 0;  // 0x8100 or 0x88a8; 0 when untagged
  std::uint16_t ethertype = 0;  // the EtherType behind the tag
  std::uint16_t l3_offset = 0;  // 14, or 18 behind a tag
  L3Kind l3 = L3Kind::none;
  bool ip_fragment = false;      // no L4 header is parsed in a fragment
  std::uint8_t ip_protocol = 0;  // IPv4 protocol, or the last IPv6 next header
  std::uint16_t l4_offset = 0;   // past IPv4 options / IPv6 extension headers
  L4Kind l4 = L4Kind::none;
  std::uint16_t l4_header_len = 0;  // TCP data offset * 4, or 8 for UDP
  // l3_offset + the IP length field (IPv4 total length, 40 + IPv6 payload
  // length); bytes past it are Ethernet padding. frame_len without IP.
  std::uint32_t packet_end = 0;

  // L2 + L3 + L4 headers: where the payload starts.
  std::uint32_t header_len() const noexcept { return std::uint32_t{l4_offset} + l4_header_len; }
  std::uint32_t l3_header_len() const noexcept { return l4_offset - std::uint32_t{l3_offset}; }
  // The L4 header and payload, as the pseudo-header counts them.
  std::uint32_t l4_len() const noexcept { return packet_end - l4_offset; }
  std::uint32_t payload_len() const noexcept { return packet_end - header_len(); }
};

enum class ParseError : std::uint8_t {
  none,
  truncated_ethernet,    // shorter than the Ethernet header or its VLAN tag
  truncated_ip,          // the IP header (with options / extension headers) passes the frame's end
  bad_ip_header,         // IP version, IPv4 header length below 20
  bad_ip_length,         // the IP length field is below the header or beyond the frame
  ipv6_ext_unsupported,  // see above
  truncated_l4,          // the TCP/UDP header passes the IP packet's end
  bad_tcp_header,        // TCP data offset below 5
  headers_too_long,      // beyond the bytes given, or longer than kMaxHeaderBytes
};

// Parses the headers from `head`, the first `head_len` bytes of a frame of
// `frame_len` bytes (head_len <= frame_len; pass the whole frame or at least
// min(frame_len, kMaxHeaderBytes) bytes).
ParseError parse_headers(const std::uint8_t* head, std::uint32_t head_len, std::uint32_t frame_len,
                         FrameLayout& out) noexcept;

// The first min(frame.len, kMaxHeaderBytes) bytes of a scattered frame as one
// contiguous block: the first span itself when it holds them, else a copy.
class HeaderBytes {
 public:
  explicit HeaderBytes(const ByteSpans& frame) noexcept;
  HeaderBytes(const HeaderBytes&) = delete;
  HeaderBytes& operator=(const HeaderBytes&) = delete;
  const std::uint8_t* data() const noexcept { return data_; }
  std::uint32_t len() const noexcept { return len_; }

 private:
  std::uint8_t copy_[kMaxHeaderBytes];
  const std::uint8_t* data_ = copy_;
  std::uint32_t len_ = 0;
};

inline ParseError parse_headers(const HeaderBytes& head, std::uint32_t frame_len,
                                FrameLayout& out) noexcept {
  return parse_headers(head.data(), head.len(), frame_len, out);
}

const char* parse_error_name(ParseError e) noexcept;

}  // namespace xdpvhost::net
