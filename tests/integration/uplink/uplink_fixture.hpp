#pragma once
// The fixture every uplink test starts from: the UplinkLab network (node and
// peer namespaces joined by a veth), a work directory for sockets and logs
// (/tmp/xdpvhost-uplink-<pid>, kept when a test fails), and helpers to run
// xdpvhostd in the node namespace, connect guests and read counters.
// TearDown stops guests and the daemon and removes the namespaces, also
// after a failure.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "frontend_guest.hpp"
#include "support/control_client.hpp"
#include "support/daemon_process.hpp"
#include "testpmd_guest.hpp"
#include "uplink_lab.hpp"

namespace xdpvhost::uplink_test {

using nlohmann::json;
using test_support::ControlClient;
using test_support::DaemonProcess;
using test_support::RpcReply;

struct GuestAddress {
  const char* name;
  const char* mac;
  const char* ip;
};

inline constexpr GuestAddress kVm1{"vm1", "52:54:00:00:20:01", "10.99.0.11"};
inline constexpr GuestAddress kVm2{"vm2", "52:54:00:00:20:02", "10.99.0.12"};
inline constexpr GuestAddress kPmd{"pmd", "52:54:00:00:20:10", "10.99.0.20"};

// The lab's addresses (UplinkLab::kPeerMac, ...) parsed, for building frames.
inline const MacAddress kPeerMac = parse_mac_text(UplinkLab::kPeerMac);
inline const Ipv4Address kPeerIp = parse_ipv4_text(UplinkLab::kPeerIp);
inline const Ipv4Address kNodeIp = parse_ipv4_text(UplinkLab::kNodeIp);

// j[key] as a counter (named short: it sits in most of the assertions).
inline std::uint64_t u(const json& j, const char* key) {
  return j.at(key).get<std::uint64_t>();
}

class UplinkTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  std::string socket_path(const std::string& name) const { return workdir_ + "/" + name + ".sock"; }
  // {"name","socket","mac","uplink":"up0"[,"mode"]}
  json port_config(const GuestAddress& guest, const char* mode = "server") const;
  // {"name":"up0","interface":"xvu-n0","queues":[0][,"tunables"]}
  json uplink_config(const json& tunables = json::object()) const;
  // A daemon config with the given uplinks and ports (and extra top-level keys).
  json daemon_config(const json& uplinks, const json& ports,
                     const json& extra = json::object()) const;

  // Starts xdpvhostd in the node namespace (ASSERT_NO_FATAL_FAILURE it);
  // control socket, log level info and no metrics listener unless `config`
  // says otherwise.
  void start_daemon(json config);
  // SIGTERM; the daemon must exit 0.
  void stop_daemon();
  // A C++ frontend guest on `guest`'s port, negotiated, the port running.
  void connect_guest(std::unique_ptr<FrontendGuest>& out, const GuestAddress& guest,
                     testing::Role role = testing::Role::kClient);
  // The common start: daemon with up0 (uplink tunables, extra config keys)
  // and port vm1 on it, the C++ frontend connected as vm1.
  void start_with_guest(std::unique_ptr<FrontendGuest>& vm1,
                        const json& uplink_tunables = json::object(),
                        const json& extra = json::object());
  void start_testpmd(std::unique_ptr<TestpmdGuest>& out, const GuestAddress& guest,
                     const std::string& mode, std::vector<std::string> app_args = {});

  // The daemon's reply; a failed socket (or no daemon) is an error reply
  // with code 0 and what went wrong as its message.
  RpcReply request(const std::string& method, const json& params = json::object());
  // Control-socket views (a failed call fails the test and yields null).
  json call(const std::string& method, const json& params = json::object());
  json port_stats(const std::string& name);
  json uplink_stats();   // stats.get uplinks.up0
  json uplink_status();  // the up0 entry of uplink.list
  std::string port_state(const std::string& name);

  // Bounded wait for a condition (an event, never a timing assertion).
  static bool wait_for(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Sum of a drops object.
  static std::uint64_t total(const json& drops);

  // A permanent neighbour entry on the peer, so no ARP precedes a test's traffic.
  void peer_neighbour(const GuestAddress& guest);
  // `count` UDP datagrams guest -> peer socket and peer socket -> guest, all
  // arriving intact, the port's counters moving by exactly that much.
  void check_udp_both_ways(FrontendGuest& vm, const GuestAddress& guest, int count = 20);
  // MAC strings of the node end's "self permanent" fdb entries contain mac?
  bool fdb_has(const char* mac) const;

  UplinkLab lab_;
  std::string workdir_;
  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<ControlClient> rpc_;
};

}  // namespace xdpvhost::uplink_test
