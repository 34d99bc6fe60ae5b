#pragma once
// Reads the fields the uplink tests look at out of an Ethernet frame:
// ARP, IPv4 with ICMP echo, UDP and TCP. Bounds-checked; fields of layers the
// frame does not have stay zero/false.

#include <cstdint>
#include <span>
#include <string>

#include "frontend/frame_builder.hpp"

namespace xdpvhost::uplink_test {

using testing::Ipv4Address;
using testing::MacAddress;

struct PacketView {
  MacAddress dst{}, src{};
  std::uint16_t ethertype = 0;

  bool arp = false;
  std::uint16_t arp_op = 0;  // 1 request, 2 reply
  MacAddress arp_sender_mac{}, arp_target_mac{};
  Ipv4Address arp_sender_ip{}, arp_target_ip{};

  bool ipv4 = false;
  Ipv4Address ip_src{}, ip_dst{};
  std::uint8_t ip_protocol = 0;
  std::size_t l4_offset = 0;  // from the start of the frame
  std::size_t l4_len = 0;

  bool icmp = false;
  std::uint8_t icmp_type = 0;  // 8 echo request, 0 echo reply
  std::uint16_t icmp_id = 0, icmp_seq = 0;

  bool udp = false;
  bool tcp = false;
  std::uint16_t src_port = 0, dst_port = 0;
  std::uint16_t l4_checksum = 0;  // UDP/TCP checksum field as sent
  std::uint8_t tcp_flags = 0;
  std::span<const std::uint8_t> payload;  // UDP/TCP/ICMP payload

  static PacketView parse(std::span<const std::uint8_t> frame);
  bool is_broadcast() const noexcept { return dst == testing::kBroadcastMac; }
};

MacAddress parse_mac_text(const std::string& text);
Ipv4Address parse_ipv4_text(const std::string& text);
std::string format_mac(const MacAddress& mac);

}  // namespace xdpvhost::uplink_test
