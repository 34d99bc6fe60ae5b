#pragma once
// Ethernet framing sizes: what a frame adds to the MTU.

#include <cstdint>

namespace xdpvhost::net {

inline constexpr std::uint32_t kEthernetHeader = 14;  // destination, source, EtherType
inline constexpr std::uint32_t kVlanTag = 4;          // one 802.1Q tag
// Bytes a frame may carry beyond its MTU: the header and one VLAN tag.
inline constexpr std::uint32_t kL2Overhead = kEthernetHeader + kVlanTag;
// The longest frame with segmentation offload (GSO, GRO): a 64 KiB IP packet.
inline constexpr std::uint32_t kMaxGsoFrame = 65535 + kL2Overhead;
// EtherTypes lib/net parses (packet_headers.hpp).
inline constexpr std::uint16_t kEtherTypeIpv4 = 0x0800;
inline constexpr std::uint16_t kEtherTypeIpv6 = 0x86dd;
inline constexpr std::uint16_t kEtherTypeVlan = 0x8100;  // 802.1Q
inline constexpr std::uint16_t kEtherTypeQinQ = 0x88a8;  // 802.1ad service tag
// The longest frame an MTU allows.
constexpr std::uint32_t max_frame_for_mtu(std::uint32_t mtu) noexcept {
  return mtu + kL2Overhead;
}

}  // namespace xdpvhost::net
