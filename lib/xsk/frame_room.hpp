#pragma once
// How much of a UMEM frame a received frame may fill: the kernel leaves
// XDP_PACKET_HEADROOM (256 bytes) in front of every frame it writes.

#include <cstdint>

namespace xdpvhost::xsk {

inline constexpr std::uint32_t kXdpPacketHeadroom = 256;

// The longest frame a UMEM of `frame_size`-byte frames receives.
constexpr std::uint32_t rx_frame_room(std::uint32_t frame_size) noexcept {
  return frame_size - kXdpPacketHeadroom;
}

}  // namespace xdpvhost::xsk
