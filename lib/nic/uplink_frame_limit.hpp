#pragma once
// The longest frame an uplink can receive and send, and what sets it -- for
// the config rules (is a guest MTU possible behind this uplink?) and the
// uplink controller (the XDP program's max_frame_len, the ports'
// max_frame). Frame lengths count the Ethernet header and a VLAN tag, not
// the FCS (net::max_frame_for_mtu).
//
// Without multi-buffer a frame must fit one UMEM frame after the kernel's
// 256 bytes of XDP headroom: frame_size - 256 (1792 for 2048-byte frames).
// With it (Linux 6.6+, socket bound with XDP_USE_SG, frags-aware program),
// measured on 6.18 / veth / copy mode:
//   - RX: a frame arrives as ceil(len / (frame_size - 256)) descriptors
//     (9000 bytes: 6 of 2048-byte frames); no AF_XDP limit was found up to
//     65549 bytes (37 descriptors) -- the interface's MTU bounds it
//     (veth drops longer frames before XDP sees them);
//   - TX: copy mode takes at most MAX_SKB_FRAGS + 1 = 18 descriptors of up to
//     frame_size bytes per packet (36864 bytes with 2048-byte frames); 19
//     are dropped whole and counted in tx_invalid_descs;
//   - native XDP with a plain (not frags-aware) program sees only frames of
//     one page: 4096 - 256 headroom - 320 skb_shared_info = 3520 bytes
//     (veth caps its peer's MTU at 3506 and refuses the program while the
//     peer's MTU is larger).
// Zero-copy multi-buffer depends on the driver
// (NETDEV_A_DEV_XDP_ZC_MAX_SEGS); it could not be tried on veth.
//
// Two steps: before anything is attached, probe_uplink_frame_facts() reads
// what the kernel and the interface say (the answer assumes the attach and
// bind will take multi-buffer); after XdpProgram::attach and
// XskSocket::create, fill in what they did and ask again for the answer
// that holds.

#include <cstdint>
#include <optional>
#include <string>

#include "nic/kernel_version.hpp"
#include "nic/xdp_features.hpp"
#include "nic/xdp_program.hpp"

namespace xdpvhost::nic {

inline constexpr std::uint32_t kXdpHeadroom = 256;  // XDP_PACKET_HEADROOM
// CONFIG_MAX_SKB_FRAGS: its default and minimum (this kernel: 17).
inline constexpr std::uint32_t kDefaultMaxSkbFrags = 17;

struct UplinkFrameFacts {
  std::uint32_t frame_size = 2048;          // UMEM frame size
  KernelVersion kernel;                     // {}: unknown, assumed new enough
  std::string ifname;                       // for the reason text
  std::string driver;                       // ETHTOOL_GDRVINFO ("veth"); "" unknown
  std::optional<XdpFeatures> xdp_features;  // read_xdp_features(); nullopt: unknown
  std::uint32_t interface_mtu = 0;          // 0: not considered
  std::uint32_t page_size = 4096;
  std::uint32_t max_skb_frags = kDefaultMaxSkbFrags;
  // What setting up the uplink did (nullopt: not yet known, assumed to go
  // the multi-buffer way).
  std::optional<XdpMode> xdp_mode;          // XdpProgram::mode()
  std::optional<bool> program_frags;        // XdpProgram::frags()
  std::optional<bool> zero_copy;            // XskSocket::zero_copy()
  std::optional<bool> socket_multi_buffer;  // XskSocket::multi_buffer()
};

struct UplinkFrameLimit {
  std::uint32_t max_frame = 0;      // longest frame received and sent
  std::uint32_t single_buffer = 0;  // longest frame in one descriptor (frame_size - 256)
  bool multi_buffer = false;        // frames above single_buffer travel as descriptor chains
  // What sets max_frame, naming the kernel or driver limit, e.g. "veth in
  // copy mode: multi-buffer AF_XDP needs kernel >= 6.6 (running 6.1); one
  // 2048-byte UMEM frame holds 1792 bytes after 256 of XDP headroom".
  std::string reason;

  bool fits(std::uint32_t frame_len) const noexcept { return frame_len <= max_frame; }
};

// Pure: the limit the facts imply.
UplinkFrameLimit uplink_frame_limit(const UplinkFrameFacts& facts);

// Reads, for `ifname` in the calling thread's network namespace, what can be
// known before attaching: the running kernel, the driver, the MTU, the
// page size and the XDP features. What cannot be read stays unknown (and
// `note`, if given, says what and why).
UplinkFrameFacts probe_uplink_frame_facts(const std::string& ifname, std::uint32_t frame_size,
                                          std::string* note = nullptr);

}  // namespace xdpvhost::nic
