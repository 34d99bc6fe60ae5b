#pragma once
// What a network device says it can do with XDP, as the kernel's "netdev"
// generic-netlink family reports it (NETDEV_CMD_DEV_GET, Linux 6.3+; the
// zero-copy segment count 6.6+): the NETDEV_XDP_ACT_* bits and, for
// zero-copy devices, how many buffers one zero-copy packet may span. Read
// once on the control thread when an uplink is set up; the answer decides
// whether multi-buffer frames can pass (see uplink_frame_limit.hpp).
//
// Debian 12's headers predate linux/netdev.h, so the few constants used are
// defined here (values from include/uapi/linux/netdev.h).

#include <cstdint>
#include <string>

namespace xdpvhost::nic {

// NETDEV_XDP_ACT_* (enum netdev_xdp_act).
inline constexpr std::uint64_t kXdpActBasic = 1U << 0;
inline constexpr std::uint64_t kXdpActRedirect = 1U << 1;
inline constexpr std::uint64_t kXdpActNdoXmit = 1U << 2;
inline constexpr std::uint64_t kXdpActXskZeroCopy = 1U << 3;
inline constexpr std::uint64_t kXdpActHwOffload = 1U << 4;
inline constexpr std::uint64_t kXdpActRxSg = 1U << 5;  // native XDP takes multi-buffer frames
inline constexpr std::uint64_t kXdpActNdoXmitSg = 1U << 6;

struct XdpFeatures {
  std::uint64_t act = 0;          // NETDEV_A_DEV_XDP_FEATURES
  std::uint32_t zc_max_segs = 0;  // NETDEV_A_DEV_XDP_ZC_MAX_SEGS; 0 = not reported
  bool rx_sg() const noexcept { return (act & kXdpActRxSg) != 0; }
  bool zero_copy() const noexcept { return (act & kXdpActXskZeroCopy) != 0; }
};

// "basic redirect rx-sg ..." for logs.
std::string to_string(const XdpFeatures& features);

// Asks the kernel about the device with `ifindex` in the calling thread's
// network namespace. 0, or -errno: -ENOENT when the kernel has no "netdev"
// family (before 6.3), -ENODEV for an unknown ifindex.
int read_xdp_features(int ifindex, XdpFeatures& out) noexcept;

}  // namespace xdpvhost::nic
