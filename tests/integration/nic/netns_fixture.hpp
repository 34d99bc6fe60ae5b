#pragma once
// Two network namespaces joined by a veth pair, created per test and torn
// down after it (also when it fails): xskt<pid>-a holds xskv0 (10.77.0.1),
// xskt<pid>-b holds xskv1 (10.77.0.2). The test process itself runs inside
// namespace a; sockets for b are created with in_b(). Namespaces left by a
// crashed run (their pid is gone) are removed first. IPv6 is off in both
// namespaces so no background multicast (DAD, MLD, router solicitations)
// disturbs the counters the tests check.

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/shell_command.hpp"
#include "support/test_namespace.hpp"
#include "sys/unique_fd.hpp"
#include "net/mac_address.hpp"
#include "nic/xdp_program.hpp"

namespace xdpvhost::xsk::test {

// The suite tests lib/xsk and lib/nic together.
using namespace xdpvhost::nic;  // NOLINT(google-build-using-namespace)
using net::MacAddress;

using test_support::run_shell;

// The experimental EtherType tests use for raw frames (IEEE 802 local).
constexpr std::uint16_t kTestEtherType = 0x88b5;

// An Ethernet frame: dst, src, EtherType, then `payload_len` bytes of
// pattern starting with the 32-bit sequence number `seq`.
std::vector<std::uint8_t> make_frame(const MacAddress& dst, const MacAddress& src,
                                     std::uint32_t seq, std::size_t payload_len,
                                     std::uint16_t ether_type = kTestEtherType);
std::uint32_t frame_seq(const std::uint8_t* frame);

// Sends `count` ICMP echo requests to ipv4 from the calling thread's
// namespace (test_support::IcmpSocket, the kernel on the other side answers)
// and returns how many replies came back, waiting up to timeout_ms for each.
int icmp_ping(const std::string& ipv4, int count, int timeout_ms = 2000);

// AF_PACKET socket bound to one interface and EtherType (non-blocking).
class PacketSocket {
 public:
  PacketSocket(const std::string& ifname, std::uint16_t ether_type);
  bool valid() const { return fd_.valid(); }
  bool send(const std::vector<std::uint8_t>& frame);
  // Frames received until `count` arrived or ~timeout_ms passed.
  std::vector<std::vector<std::uint8_t>> receive(std::size_t count, int timeout_ms);
  int fd() const { return fd_.get(); }

 private:
  sys::UniqueFd fd_;
  int ifindex_ = 0;
};

class NetnsPair : public ::testing::Test {
 protected:
  static constexpr const char* kIfA = "xskv0";
  static constexpr const char* kIfB = "xskv1";
  static constexpr const char* kIpA = "10.77.0.1";
  static constexpr const char* kIpB = "10.77.0.2";

  void SetUp() override;
  void TearDown() override;

  // Runs fn with the calling thread in namespace b (sockets it creates stay
  // in b), then returns to a.
  void in_b(const std::function<void()>& fn);
  // "ip netns exec <b> " + command.
  int run_in_b(const std::string& command, std::string* output = nullptr);
  int run_in_a(const std::string& command, std::string* output = nullptr);

  std::string ns_a_, ns_b_;
  MacAddress mac_a_{}, mac_b_{};

 private:
  std::optional<test_support::TestNamespace> a_, b_;
  std::optional<test_support::NetnsScope> in_a_;
};

MacAddress read_mac(const std::string& ns, const std::string& ifname);

}  // namespace xdpvhost::xsk::test
