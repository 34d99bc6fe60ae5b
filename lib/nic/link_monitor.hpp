#pragma once
// Interface events from rtnetlink (RTMGRP_LINK) for uplink recovery: an
// interface appeared, went up or down, was renamed or deleted. fd() is
// non-blocking for epoll; read_events() drains what is pending. If the
// kernel dropped notifications (socket buffer overflow, ENOBUFS),
// read_events() resynchronises with a dump and reports the differences, so
// no transition is lost.
//
// "Up" means operationally up: IFF_UP and IFF_RUNNING (carrier). Bound to
// the network namespace current at open(). Control thread only.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nic/link_state_table.hpp"

struct nlmsghdr;

namespace xdpvhost::nic {

class RtnlSocket;

// False if nlh is not a well-formed RTM_NEWLINK/RTM_DELLINK message.
bool parse_link_message(const nlmsghdr* nlh, LinkMessage& out);

class LinkMonitor {
 public:
  // Subscribes, then dumps the current links; the first read_events()
  // reports each of them as kAdded.
  static std::unique_ptr<LinkMonitor> open(std::string& error);
  ~LinkMonitor();
  LinkMonitor(const LinkMonitor&) = delete;
  LinkMonitor& operator=(const LinkMonitor&) = delete;

  int fd() const noexcept;

  // Appends pending transitions to `out`; returns how many or -errno.
  int read_events(std::vector<LinkEvent>& out);

  // Last known state of ifname; false if the monitor does not know it.
  bool lookup(const std::string& ifname, LinkEvent& out) const {
    return table_.lookup(ifname, out);
  }
  // The interface (in this namespace) whose hardware address is `mac`.
  std::optional<std::string> interface_with(const net::MacAddress& mac) const {
    return table_.interface_with(mac);
  }

 private:
  LinkMonitor() = default;
  int resync(std::vector<LinkEvent>& out);

  std::unique_ptr<RtnlSocket> events_;
  std::unique_ptr<RtnlSocket> requests_;
  LinkStateTable table_;
  std::vector<LinkEvent> pending_;  // from the initial dump
};

}  // namespace xdpvhost::nic
