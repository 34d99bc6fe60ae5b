#pragma once
// One Ethernet/IPv4/UDP frame with complete IP and UDP checksums, of an
// exact length (without FCS), as the paced source sends it.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace xdpvhost::bench {

using Mac = std::array<std::uint8_t, 6>;

std::optional<Mac> parse_mac(std::string_view text);

struct UdpFrameSpec {
  Mac dst_mac{};
  Mac src_mac{};
  std::uint32_t src_ip = 0;  // host byte order
  std::uint32_t dst_ip = 0;  // host byte order
  std::uint16_t src_port = 9;
  std::uint16_t dst_port = 9;
  std::size_t frame_len = 64;  // Ethernet header to end of payload; at least 42
};

std::vector<std::uint8_t> build_udp_frame(const UdpFrameSpec& spec);

}  // namespace xdpvhost::bench
