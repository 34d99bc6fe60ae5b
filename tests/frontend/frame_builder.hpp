#pragma once
// Builders for the Ethernet frames tests send: Ethernet, IPv4/UDP, IPv4/TCP,
// ICMP echo and ARP, each with correct checksums (see frame_checksum.hpp to
// verify or to make them NEEDS_CSUM partial).

#include <array>
#include <cstdint>
#include <span>
#include <vector>

namespace xdpvhost::testing {

using MacAddress = std::array<std::uint8_t, 6>;
using Ipv4Address = std::array<std::uint8_t, 4>;

constexpr MacAddress kBroadcastMac{0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
constexpr std::uint16_t kEtherTypeArp = 0x0806;
constexpr std::uint16_t kEtherTypeVlan = 0x8100;

// Locally administered unicast MAC 02:00:00:00:hi:lo.
MacAddress make_mac(std::uint16_t id);

struct UdpFrameSpec {
  MacAddress dst_mac{};
  MacAddress src_mac{};
  Ipv4Address src_ip{10, 0, 0, 1};
  Ipv4Address dst_ip{10, 0, 0, 2};
  std::uint16_t src_port = 1024;
  std::uint16_t dst_port = 9;
  std::vector<std::uint8_t> payload;
  std::uint8_t ttl = 64;
  std::uint16_t ip_id = 0;
  bool udp_checksum = true;  // false sends checksum 0 (absent)
};

struct TcpFrameSpec {
  MacAddress dst_mac{};
  MacAddress src_mac{};
  Ipv4Address src_ip{10, 0, 0, 1};
  Ipv4Address dst_ip{10, 0, 0, 2};
  std::uint16_t src_port = 1024;
  std::uint16_t dst_port = 80;
  std::uint32_t seq = 1;
  std::uint32_t ack = 0;
  std::uint8_t flags = 0x18;  // PSH|ACK
  std::uint16_t window = 65535;
  std::vector<std::uint8_t> payload;
  std::uint8_t ttl = 64;
  std::uint16_t ip_id = 0;
};

struct IcmpEchoSpec {
  MacAddress dst_mac{};
  MacAddress src_mac{};
  Ipv4Address src_ip{10, 0, 0, 1};
  Ipv4Address dst_ip{10, 0, 0, 2};
  bool reply = false;  // echo reply (type 0) instead of request (type 8)
  std::uint16_t identifier = 1;
  std::uint16_t sequence = 1;
  std::vector<std::uint8_t> payload;
  std::uint8_t ttl = 64;
};

struct ArpSpec {
  bool reply = false;  // op 2 instead of 1
  MacAddress sender_mac{};
  Ipv4Address sender_ip{};
  MacAddress target_mac{};  // zero in a request
  Ipv4Address target_ip{};
  MacAddress dst_mac = kBroadcastMac;  // Ethernet destination
};

std::vector<std::uint8_t> build_ethernet(const MacAddress& dst, const MacAddress& src,
                                         std::uint16_t ethertype,
                                         std::span<const std::uint8_t> payload);
// Inserts an 802.1Q tag after the source MAC.
std::vector<std::uint8_t> add_vlan_tag(std::span<const std::uint8_t> frame, std::uint16_t vlan_id,
                                       std::uint8_t priority = 0);
std::vector<std::uint8_t> build_udp(const UdpFrameSpec& spec);
std::vector<std::uint8_t> build_tcp(const TcpFrameSpec& spec);
std::vector<std::uint8_t> build_icmp_echo(const IcmpEchoSpec& spec);
std::vector<std::uint8_t> build_arp(const ArpSpec& spec);

// Deterministic payload bytes (differs per seed), for end-to-end comparison.
std::vector<std::uint8_t> payload_pattern(std::size_t len, std::uint32_t seed);

MacAddress frame_dst_mac(std::span<const std::uint8_t> frame);
MacAddress frame_src_mac(std::span<const std::uint8_t> frame);
std::uint16_t frame_ethertype(std::span<const std::uint8_t> frame);
// The frame with destination and source MAC exchanged.
std::vector<std::uint8_t> swap_macs(std::span<const std::uint8_t> frame);

}  // namespace xdpvhost::testing
