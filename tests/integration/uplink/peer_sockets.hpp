#pragma once
// Kernel sockets the tests use on the peer (or node) side. Each is created in
// the calling thread's network namespace (wrap the construction in a
// NetnsScope) and is non-blocking; receive calls wait at most `timeout_ms`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"

namespace xdpvhost::uplink_test {

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

struct EchoReply {
  std::string from_ip;
  std::uint16_t id = 0, seq = 0;
  std::vector<std::uint8_t> payload;
};

// Raw ICMP socket: echo requests out, echo replies (of our id) in.
class IcmpSocket {
 public:
  explicit IcmpSocket(std::uint16_t id);
  bool valid() const noexcept { return fd_.valid(); }
  bool send_echo(const std::string& ip, std::uint16_t seq,
                 const std::vector<std::uint8_t>& payload);
  std::optional<EchoReply> receive_reply(int timeout_ms);
  // Sends `count` requests one after the other, each waiting up to
  // timeout_ms for its reply; returns the replies that came back.
  int ping(const std::string& ip, int count, int timeout_ms = 2000);

 private:
  sys::UniqueFd fd_;
  std::uint16_t id_;
  std::uint16_t next_seq_ = 1;
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
