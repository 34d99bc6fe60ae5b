#pragma once
// Makes a NIC accept unicast frames for the guests' MACs. A real NIC drops
// frames for addresses it does not own before XDP runs, so each guest MAC is
// added to the device's unicast address list, exactly as
// `bridge fdb add MAC dev IF self permanent` does (RTM_NEWNEIGH, AF_BRIDGE,
// NTF_SELF, NUD_PERMANENT, NDA_LLADDR). Where the device refuses, the filter
// falls back to promiscuous mode, held as a kernel-refcounted
// PACKET_MR_PROMISC membership on a private AF_PACKET socket: it never
// clobbers an administrator's IFF_PROMISC and the kernel drops it when the
// process dies, even by SIGKILL. Everything added is removed by remove() and
// by the destructor.
//
// (Devices without IFF_UNICAST_FLT -- veth among them -- accept the entry and
// the kernel itself turns on promiscuity while the list is non-empty.)
//
// Bound to the ifindex and network namespace current at open(); recreate it
// when the interface is recreated. Control thread only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"
#include "net/mac_address.hpp"

namespace xdpvhost::nic {

class RtnlSocket;

class UnicastFilter {
 public:
  enum class Method : std::uint8_t { kUnicastList, kPromiscuous };

  static std::unique_ptr<UnicastFilter> open(const std::string& ifname, std::string& error);
  ~UnicastFilter();
  UnicastFilter(const UnicastFilter&) = delete;
  UnicastFilter& operator=(const UnicastFilter&) = delete;

  // Adds mac (idempotent per MAC). 0 or -errno. `method` says how it was
  // admitted; `reason` why the unicast list was not used, if it was not.
  int add(const net::MacAddress& mac, Method* method = nullptr, std::string* reason = nullptr);
  // Undoes add(). 0, -ENOENT if mac was not added here, or -errno.
  int remove(const net::MacAddress& mac);

  int ifindex() const noexcept { return ifindex_; }
  // MACs currently admitted through the unicast list / promiscuous mode.
  std::size_t unicast_entries() const noexcept;
  std::size_t promiscuous_users() const noexcept;
  bool promiscuous() const noexcept { return promisc_fd_.valid(); }

  // The raw netlink operations (RTM_NEWNEIGH/RTM_DELNEIGH, NTF_SELF): 0 or -errno.
  int netlink_add(const net::MacAddress& mac) noexcept;
  int netlink_delete(const net::MacAddress& mac) noexcept;

 private:
  UnicastFilter() = default;
  int promisc_acquire() noexcept;
  void promisc_release() noexcept;

  struct Entry {
    net::MacAddress mac;
    Method method;
  };
  std::unique_ptr<RtnlSocket> rtnl_;
  std::string ifname_;
  int ifindex_ = 0;
  std::vector<Entry> entries_;
  sys::UniqueFd promisc_fd_;  // AF_PACKET socket holding PACKET_MR_PROMISC
};

const char* to_string(UnicastFilter::Method method);

}  // namespace xdpvhost::nic
