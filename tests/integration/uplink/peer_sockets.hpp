#pragma once
// Kernel sockets the tests use on the peer (or node) side. Each is created in
// the calling thread's network namespace (wrap the construction in a
// NetnsScope) and is non-blocking; receive calls wait at most `timeout_ms`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/icmp_socket.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::uplink_test {

using test_support::EchoReply;
using test_support::IcmpSocket;

struct Datagram {
  std::vector<std::uint8_t> payload;
  std::string from_ip;
  std::uint16_t from_port = 0;
};

class UdpSocket {
 public:
  // Bound to 0.0.0.0:port (0: any port); rcvbuf forced when not 0.
  explicit UdpSocket(std::uint16_t port = 0, int rcvbuf = 0);
  bool valid() const noexcept { return fd_.valid(); }
  bool send_to(const std::string& ip, std::uint16_t port, const std::vector<std::uint8_t>& payload);
  std::optional<Datagram> receive(int timeout_ms);
  // Everything queued now, without waiting.
  std::vector<Datagram> drain();

 private:
  sys::UniqueFd fd_;
};

// AF_PACKET socket bound to one interface (all EtherTypes unless given).
class PacketSocket {
 public:
  PacketSocket(const std::string& ifname, std::uint16_t ether_type = 0x0003 /* ETH_P_ALL */,
               int rcvbuf = 0);
  bool valid() const noexcept { return fd_.valid(); }
  bool send(const std::vector<std::uint8_t>& frame);
  // Received (not our own outgoing) frames until `count` arrived or nothing
  // came for timeout_ms.
  std::vector<std::vector<std::uint8_t>> receive(std::size_t count, int timeout_ms);
  // Frames the socket lost to a full receive buffer since the last call.
  std::uint64_t drops();

 private:
  sys::UniqueFd fd_;
};

}  // namespace xdpvhost::uplink_test
