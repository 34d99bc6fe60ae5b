#pragma once
// A raw ICMP socket for ping-style checks: echo requests out, the echo
// replies carrying our identifier in. Created in the calling thread's network
// namespace (wrap the construction in a NetnsScope to put it elsewhere);
// non-blocking, receive calls wait at most `timeout_ms`.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sys/unique_fd.hpp"

namespace xdpvhost::test_support {

struct EchoReply {
  std::string from_ip;
  std::uint16_t id = 0, seq = 0;
  std::vector<std::uint8_t> payload;
};

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

}  // namespace xdpvhost::test_support
