#pragma once
// Multi-buffer AF_XDP (Linux 6.6+): one packet as a chain of consecutive
// ring descriptors. Every descriptor of the chain but the last carries
// XDP_PKT_CONTD in xdp_desc.options; a descriptor without it ends the
// packet, so a single-descriptor packet looks exactly as before
// (options 0). Pure arithmetic over descriptor options, shared by
// XskSocket's RX and TX helpers and unit-tested on its own.
//
// Kernel rules (Documentation/networking/af_xdp.rst, "Multi-Buffer
// Support"; the numbers checked on this machine, see README.md):
//   - RX: the kernel publishes a packet's descriptors together; a batch the
//     application peeks may still end inside a packet, whose rest then
//     comes with the next peek.
//   - TX, copy mode: at most CONFIG_MAX_SKB_FRAGS + 1 descriptors per
//     packet (17 + 1 = 18, the minimum of the config and this kernel's
//     value); a longer chain is dropped whole and its descriptors counted
//     in tx_invalid_descs. A zero-length descriptor is invalid too.

#include <cstdint>

namespace xdpvhost::xsk {

// xdp_desc.options: the packet continues in the next descriptor
// (XDP_PKT_CONTD; linux/if_xdp.h of Linux 6.6+ -- Debian 12's 6.1 headers
// lack it).
inline constexpr std::uint32_t kPacketContinues = 1U << 0;
// Bind flag: the socket takes packets of several descriptors (XDP_USE_SG).
inline constexpr std::uint16_t kBindUseSg = 1U << 4;
// Copy-mode TX: descriptors one packet may span (MAX_SKB_FRAGS + 1 with the
// default and minimum CONFIG_MAX_SKB_FRAGS = 17).
inline constexpr std::uint32_t kCopyModeMaxTxDescriptors = 18;

constexpr bool continues(std::uint32_t options) noexcept {
  return (options & kPacketContinues) != 0;
}

// Descriptors a packet of `len` bytes needs when each holds at most
// `per_descriptor` bytes (RX: the frame room, frame_size - 256; TX: the
// whole frame). 0 for an empty packet.
constexpr std::uint32_t descriptors_for(std::uint32_t len, std::uint32_t per_descriptor) noexcept {
  return per_descriptor == 0 ? 0 : (len + per_descriptor - 1) / per_descriptor;
}

// Of the `n` descriptors options_at(0) .. options_at(n - 1), in ring order
// and starting at a packet boundary, how many lead up to and include the
// last end of a packet: the descriptors of whole packets. A trailing,
// unfinished chain is not counted. Scans backwards from the end, so the
// cost is the length of that trailing chain, not n.
template <class OptionsAt>
constexpr std::uint32_t whole_packet_descriptors(std::uint32_t n, OptionsAt&& options_at) noexcept {
  while (n != 0 && continues(options_at(n - 1))) --n;
  return n;
}

// The packet that starts at descriptor `first` of `n` (in ring order): how
// many descriptors it spans (0 if its end is not among them) and its length.
struct PacketExtent {
  std::uint32_t descriptors = 0;
  std::uint32_t len = 0;
  bool complete() const noexcept { return descriptors != 0; }
};

// desc_at(i) returns something with .len and .options (an xdp_desc).
template <class DescAt>
constexpr PacketExtent packet_extent(std::uint32_t first, std::uint32_t n,
                                     DescAt&& desc_at) noexcept {
  std::uint32_t len = 0;
  for (std::uint32_t i = first; i < n; ++i) {
    const auto& d = desc_at(i);
    len += d.len;
    if (!continues(d.options)) return PacketExtent{i - first + 1, len};
  }
  return PacketExtent{};
}

// The options of descriptor `i` of a TX packet of `count` descriptors.
constexpr std::uint32_t tx_options(std::uint32_t i, std::uint32_t count) noexcept {
  return i + 1 < count ? kPacketContinues : 0;
}

}  // namespace xdpvhost::xsk
