#pragma once
// The NIC's RX queues, which AF_XDP binds by id (0 .. n-1), and their
// changes (ethtool -L), for an uplink that binds them all.
//
// rx_queue_count(): ETHTOOL_GCHANNELS (rx + combined channels). A driver
// without channels (the ioctl unsupported) has the queues sysfs lists
// (/sys/class/net/<if>/queues/rx-*). Both in the caller's namespace.
//
// ChannelMonitor: the ethtool generic netlink family's "monitor" group,
// which the kernel tells of every channel change, made through netlink or
// the ioctl (ETHTOOL_MSG_CHANNELS_NTF). fd() is non-blocking for epoll;
// read_events() drains what is pending. Control thread only.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct mnl_socket;

namespace xdpvhost::nic {

std::optional<std::uint32_t> rx_queue_count(const std::string& ifname, std::string& why);

class ChannelMonitor {
 public:
  // nullptr and why when the kernel has no ethtool netlink family.
  static std::unique_ptr<ChannelMonitor> open(std::string& why);
  ~ChannelMonitor();
  ChannelMonitor(const ChannelMonitor&) = delete;
  ChannelMonitor& operator=(const ChannelMonitor&) = delete;

  int fd() const noexcept;

  // Appends the ifindexes whose channels changed; returns how many or
  // -errno (-ENOBUFS: the kernel dropped notifications; check them all).
  int read_events(std::vector<std::uint32_t>& ifindexes);

 private:
  ChannelMonitor() = default;
  mnl_socket* nl_ = nullptr;
  std::uint16_t family_ = 0;
};

}  // namespace xdpvhost::nic
