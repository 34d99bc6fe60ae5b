#pragma once
// The last known state of every interface, turning rtnetlink link messages
// into transitions (added / up / down / renamed / deleted). Used by
// LinkMonitor; no syscalls.

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "net/mac_address.hpp"

namespace xdpvhost::nic {

struct LinkEvent {
  enum class Kind : std::uint8_t {
    kAdded,    // first seen (initial dump, or created later)
    kUp,       // became IFF_UP && IFF_RUNNING
    kDown,     // stopped being IFF_UP && IFF_RUNNING
    kRenamed,  // same ifindex, new name (ifname is the new one)
    kDeleted,  // RTM_DELLINK, or missing from a resynchronising dump
  };
  Kind kind = Kind::kAdded;
  int ifindex = 0;
  std::string ifname;
  unsigned flags = 0;  // IFF_* as last reported
  bool up = false;     // IFF_UP && IFF_RUNNING
};

const char* to_string(LinkEvent::Kind kind);

// The fields of one RTM_NEWLINK/RTM_DELLINK message.
struct LinkMessage {
  bool deleted = false;
  int ifindex = 0;
  std::string ifname;  // may be empty (e.g. in some RTM_DELLINK messages)
  unsigned flags = 0;
  std::optional<net::MacAddress> address;  // IFLA_ADDRESS, when it is an Ethernet one
};

class LinkStateTable {
 public:
  // Appends the transitions `msg` causes.
  void apply(const LinkMessage& msg, std::vector<LinkEvent>& out);
  // Reports every known link whose ifindex is not in `present` as deleted.
  void forget_missing(const std::unordered_set<int>& present, std::vector<LinkEvent>& out);
  // Current state of ifname (kind kAdded); false if unknown.
  bool lookup(const std::string& ifname, LinkEvent& out) const;
  // The name of an interface whose hardware address is `mac`, if any.
  std::optional<std::string> interface_with(const net::MacAddress& mac) const;
  std::size_t size() const noexcept { return links_.size(); }

 private:
  struct State {
    std::string ifname;
    unsigned flags = 0;
    std::optional<net::MacAddress> address;
  };
  std::unordered_map<int, State> links_;
};

}  // namespace xdpvhost::nic
