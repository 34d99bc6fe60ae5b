#pragma once
// The network the uplink tests run in, created per test and removed after it
// (also when the test fails):
//
//   namespace xvu-<pid>-node                 namespace xvu-<pid>-peer
//   xdpvhostd, uplink on xvu-n0              the peer's kernel stack
//   xvu-n0 10.99.0.2/24  <==== veth ====>    xvu-p0 10.99.0.1/24
//   02:78:76:00:00:01                        02:78:76:00:00:02
//   xvu-n1 10.98.0.2/24  <==== veth ====>    xvu-p1 10.98.0.1/24
//   02:78:76:00:01:01                        02:78:76:00:01:02
//   (the second pair, a second LAN, only where a test asks for it)
//
// One queue per veth end (the veth default), IPv6 off in both namespaces (no
// background DAD/MLD/RS traffic disturbs exact counts), TX checksum offload
// off on the peer end unless a test turns it on. Namespaces left by a run
// whose process is gone are removed before new ones are made.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "support/test_namespace.hpp"

namespace xdpvhost::uplink_test {

using test_support::NetnsScope;

struct LinkCounters {
  std::uint64_t rx_packets = 0, rx_bytes = 0, rx_dropped = 0;
  std::uint64_t tx_packets = 0, tx_bytes = 0, tx_dropped = 0;
};

// "Udp.InDatagrams" -> value, from /proc/net/snmp.
using SnmpCounters = std::map<std::string, std::uint64_t>;

class UplinkLab {
 public:
  static constexpr const char* kNodeIf = "xvu-n0";
  static constexpr const char* kPeerIf = "xvu-p0";
  static constexpr const char* kNodeMac = "02:78:76:00:00:01";
  static constexpr const char* kPeerMac = "02:78:76:00:00:02";
  static constexpr const char* kNodeIp = "10.99.0.2";
  static constexpr const char* kPeerIp = "10.99.0.1";
  // A veth pair's two ends: interface, MAC, address (/24).
  struct VethPair {
    const char *node_if, *node_mac, *node_ip;
    const char *peer_if, *peer_mac, *peer_ip;
  };
  static constexpr VethPair kFirstLan{kNodeIf, kNodeMac, kNodeIp, kPeerIf, kPeerMac, kPeerIp};
  static constexpr VethPair kSecondLan{"xvu-n1", "02:78:76:00:01:01", "10.98.0.2",
                                       "xvu-p1", "02:78:76:00:01:02", "10.98.0.1"};

  UplinkLab();
  UplinkLab(const UplinkLab&) = delete;
  UplinkLab& operator=(const UplinkLab&) = delete;

  bool create_namespaces(std::string& error);
  // The veth pair with addresses, both ends up. Again after delete_veth()
  // it makes the same pair (names, MACs, addresses) anew.
  // `queues`: RX and TX queues of the node end (veth's numrxqueues/numtxqueues).
  bool create_veth(std::string& error, int queues = 1);
  bool delete_veth(std::string* error = nullptr);
  // The second pair (kSecondLan), a LAN of its own.
  bool create_second_veth(std::string& error);

  const std::string& node_ns() const noexcept { return node_.name(); }
  const std::string& peer_ns() const noexcept { return peer_.name(); }
  int node_fd() const noexcept { return node_.fd(); }
  int peer_fd() const noexcept { return peer_.fd(); }

  // "ip netns exec <ns> " + command.
  int in_node(const std::string& command, std::string* output = nullptr) const {
    return node_.exec(command, output);
  }
  int in_peer(const std::string& command, std::string* output = nullptr) const {
    return peer_.exec(command, output);
  }

  LinkCounters node_link() const;
  LinkCounters peer_link() const;
  SnmpCounters peer_snmp() const;
  SnmpCounters node_snmp() const;
  // MACs (lower case) that `bridge fdb show dev IF` lists as "self permanent"
  // on the node end.
  std::vector<std::string> node_fdb_self_permanent() const;
  struct XdpProgramInfo {
    std::string name;
    std::uint32_t id = 0;
  };
  // The XDP programs attached to the node end (ip -d link).
  std::vector<XdpProgramInfo> node_xdp_programs() const;
  // The node end's promiscuity count (ip -d link), -1 if absent.
  int node_promiscuity() const;
  // ip link's operstate of the node end ("UP", "DOWN", "LOWERLAYERDOWN"), "" if absent.
  std::string node_operstate() const;

 private:
  LinkCounters link_counters(const std::string& ns, const char* ifname) const;
  static SnmpCounters snmp(int ns_fd);

  test_support::TestNamespace node_, peer_;
};

}  // namespace xdpvhost::uplink_test
