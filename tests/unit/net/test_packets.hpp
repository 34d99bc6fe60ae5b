#pragma once
// Hand-built Ethernet frames for the lib/net tests, and an independent
// reference for their checksums (a byte-at-a-time RFC 1071 sum and its own
// header walk; nothing from lib/net).

#include <cstdint>
#include <vector>

namespace xdpvhost::net::testing {

using Bytes = std::vector<std::uint8_t>;

enum class L4Checksum {
  full,     // a complete checksum
  partial,  // the pseudo-header sum over the whole L4 length (NEEDS_CSUM)
  zero,
};

struct PacketSpec {
  bool ipv6 = false;
  std::uint16_t vlan_tpid = 0;  // 0x8100 / 0x88a8; 0: untagged
  std::uint16_t vlan_tci = 0x0064;
  std::uint8_t tos = 0;  // IPv4 TOS / IPv6 traffic class (ECN in the low 2 bits)
  std::uint8_t ttl = 64;
  std::uint16_t ip_id = 0x1234;
  bool df = true;
  std::uint16_t frag = 0;  // IPv4 MF + offset bits
  std::uint32_t flow_label = 0x12345;
  Bytes ipv4_options;  // a multiple of 4
  Bytes ipv6_ext;      // raw extension headers; first next-header in ipv6_first_next
  std::uint8_t ipv6_first_next = 0;
  bool udp = false;
  std::uint16_t sport = 40000;
  std::uint16_t dport = 5201;
  std::uint32_t seq = 1000;
  std::uint32_t ack = 777;
  std::uint8_t flags = 0x10;  // ACK
  std::uint16_t window = 512;
  Bytes tcp_options;          // a multiple of 4
  std::uint8_t src_last = 1;  // last byte of the source address
  Bytes payload;
  L4Checksum csum = L4Checksum::full;
  std::uint32_t padding = 0;  // Ethernet padding after the IP packet
};

Bytes build_frame(const PacketSpec& spec);
// payload bytes 0, 1, 2, ... (mod 251), `n` of them, starting at `start`.
Bytes pattern(std::uint32_t n, std::uint32_t start = 0);
// NOP, NOP, timestamp(tsval, tsecr).
Bytes timestamp_option(std::uint32_t tsval, std::uint32_t tsecr);

std::uint16_t be16(const std::uint8_t* p);
std::uint32_t be32(const std::uint8_t* p);
void put_be16(std::uint8_t* p, std::uint16_t v);
void put_be32(std::uint8_t* p, std::uint32_t v);

// The reference, written separately from lib/net.
std::uint32_t ref_sum(const std::uint8_t* p, std::size_t n, std::uint32_t sum = 0);
std::uint16_t ref_fold(std::uint32_t sum);

struct RefLayout {
  std::size_t l3 = 0;
  bool ipv6 = false;
  std::size_t l4 = 0;
  std::size_t end = 0;  // end of the IP packet
  std::uint8_t proto = 0;
};
RefLayout ref_layout(const Bytes& frame);  // IPv4/IPv6 without extension headers, optional tag
std::uint32_t ref_pseudo(const Bytes& frame, const RefLayout& l, std::size_t l4_len);
bool ref_ipv4_header_ok(const Bytes& frame);
bool ref_l4_checksum_ok(const Bytes& frame);
// The value a partial (NEEDS_CSUM) field must hold for this frame.
std::uint16_t ref_partial_value(const Bytes& frame);
// What a NIC does with a partial checksum: sum [start, end of IP packet),
// store the complement at start + offset.
void ref_complete(Bytes& frame, std::size_t start, std::size_t offset);

}  // namespace xdpvhost::net::testing
