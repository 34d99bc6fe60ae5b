#include "nic/channels.hpp"

#include <libmnl/libmnl.h>
#include <linux/ethtool.h>
#include <linux/ethtool_netlink.h>
#include <linux/genetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "nic/genl.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::nic {

namespace {

std::optional<std::uint32_t> sysfs_rx_queues(const std::string& ifname) {
  std::error_code ec;
  std::uint32_t n = 0;
  for (const auto& e :
       std::filesystem::directory_iterator("/sys/class/net/" + ifname + "/queues", ec)) {
    if (std::string_view(e.path().filename().native()).starts_with("rx-")) ++n;
  }
  if (ec || n == 0) return std::nullopt;
  return n;
}

}  // namespace

std::optional<std::uint32_t> rx_queue_count(const std::string& ifname, std::string& why) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) {
    why = "not an interface name: \"" + ifname + "\"";
    return std::nullopt;
  }
  sys::UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) fd = sys::UniqueFd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC));
  if (!fd) {
    why = std::string("socket: ") + std::strerror(errno);
    return std::nullopt;
  }
  ethtool_channels channels{};
  channels.cmd = ETHTOOL_GCHANNELS;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, ifname.c_str(), ifname.size() + 1);
  ifr.ifr_data = reinterpret_cast<char*>(&channels);
  if (::ioctl(fd.get(), SIOCETHTOOL, &ifr) == 0) {
    const std::uint32_t n = channels.rx_count + channels.combined_count;
    if (n != 0) return n;
  } else if (errno != EOPNOTSUPP) {
    why = "ETHTOOL_GCHANNELS on " + ifname + ": " + std::strerror(errno);
    return std::nullopt;
  }
  if (auto n = sysfs_rx_queues(ifname)) return n;
  why = ifname + " tells no channels, and sysfs lists no RX queue of it";
  return std::nullopt;
}

std::unique_ptr<ChannelMonitor> ChannelMonitor::open(std::string& why) {
  std::unique_ptr<ChannelMonitor> self(new ChannelMonitor());
  // The family is looked up before the socket joins a group and turns
  // non-blocking: its answer is then the only thing to read.
  genl::MnlSocket nl = genl::open(false);
  if (!nl) {
    why = std::string("generic netlink: ") + std::strerror(errno);
    return nullptr;
  }
  genl::Family family;
  if (const int err = genl::resolve(nl.get(), ETHTOOL_GENL_NAME, family); err != 0) {
    why = std::string("the ethtool netlink family: ") + std::strerror(-err);
    return nullptr;
  }
  const auto group = family.groups.find(ETHTOOL_MCGRP_MONITOR_NAME);
  if (group == family.groups.end()) {
    why = "the ethtool netlink family has no \"monitor\" group";
    return nullptr;
  }
  std::uint32_t id = group->second;
  const int fd = mnl_socket_get_fd(nl.get());
  if (mnl_socket_setsockopt(nl.get(), NETLINK_ADD_MEMBERSHIP, &id, sizeof id) < 0 ||
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) {
    why = std::string("joining ethtool's monitor group: ") + std::strerror(errno);
    return nullptr;
  }
  self->family_ = family.id;
  self->nl_ = nl.release();
  return self;
}

ChannelMonitor::~ChannelMonitor() {
  if (nl_ != nullptr) mnl_socket_close(nl_);
}

int ChannelMonitor::fd() const noexcept {
  return mnl_socket_get_fd(nl_);
}

namespace {

struct Notification {
  std::uint32_t ifindex = 0;
};

int header_cb(const nlattr* attr, void* data) {
  if (mnl_attr_get_type(attr) == ETHTOOL_A_HEADER_DEV_INDEX &&
      mnl_attr_validate(attr, MNL_TYPE_U32) == 0)
    static_cast<Notification*>(data)->ifindex = mnl_attr_get_u32(attr);
  return MNL_CB_OK;
}

int channels_cb(const nlattr* attr, void* data) {
  if (mnl_attr_get_type(attr) == ETHTOOL_A_CHANNELS_HEADER &&
      mnl_attr_validate(attr, MNL_TYPE_NESTED) == 0)
    mnl_attr_parse_nested(attr, header_cb, data);
  return MNL_CB_OK;
}

}  // namespace

int ChannelMonitor::read_events(std::vector<std::uint32_t>& ifindexes) {
  int count = 0;
  std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
  for (;;) {
    const ssize_t n = ::recv(fd(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return count;
      return -errno;
    }
    const auto* nlh = reinterpret_cast<const nlmsghdr*>(buf.data());
    int len = static_cast<int>(n);
    while (mnl_nlmsg_ok(nlh, len)) {
      if (nlh->nlmsg_type == family_ && mnl_nlmsg_get_payload_len(nlh) >= sizeof(genlmsghdr)) {
        const auto* header = static_cast<const genlmsghdr*>(mnl_nlmsg_get_payload(nlh));
        Notification note;
        if (header->cmd == ETHTOOL_MSG_CHANNELS_NTF &&
            mnl_attr_parse(nlh, sizeof(genlmsghdr), channels_cb, &note) >= 0 && note.ifindex != 0) {
          ifindexes.push_back(note.ifindex);
          ++count;
        }
      }
      nlh = mnl_nlmsg_next(nlh, &len);
    }
  }
}

}  // namespace xdpvhost::nic
