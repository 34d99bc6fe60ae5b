#pragma once
// Generic netlink requests over libmnl, for the families the daemon asks:
// "netdev" (XDP features) and "ethtool" (channel notifications). A family is
// found by name with its multicast groups (CTRL_CMD_GETFAMILY).

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <libmnl/libmnl.h>

namespace xdpvhost::nic::genl {

struct MnlClose {
  void operator()(mnl_socket* nl) const noexcept { mnl_socket_close(nl); }
};
using MnlSocket = std::unique_ptr<mnl_socket, MnlClose>;

// A NETLINK_GENERIC socket bound to no group; nullptr and errno on failure.
MnlSocket open(bool nonblocking);

// Writes a request header (NLM_F_REQUEST | NLM_F_ACK) for `cmd` of family
// `type` into buf (MNL_SOCKET_BUFFER_SIZE bytes).
nlmsghdr* put_header(char* buf, std::uint16_t type, std::uint8_t cmd, std::uint32_t seq);

// Sends one request and runs `cb` over the answer until the kernel's ack.
// 0 or -errno.
int transact(mnl_socket* nl, nlmsghdr* nlh, mnl_cb_t cb, void* data);

struct Family {
  std::uint16_t id = 0;
  std::map<std::string, std::uint32_t> groups;  // multicast group name -> id
};

// The family called `name`: 0 or -errno (-ENOENT: the kernel has none).
int resolve(mnl_socket* nl, const char* name, Family& out);

}  // namespace xdpvhost::nic::genl
