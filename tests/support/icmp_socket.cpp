#include "icmp_socket.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <chrono>
#include <cstring>

#include "frontend/frame_checksum.hpp"

namespace xdpvhost::test_support {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

IcmpSocket::IcmpSocket(std::uint16_t id) : id_(id) {
  fd_.reset(::socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMP));
}

bool IcmpSocket::send_echo(const std::string& ip, std::uint16_t seq,
                           const std::vector<std::uint8_t>& payload) {
  std::vector<std::uint8_t> req(8 + payload.size());
  req[0] = 8;
  req[4] = static_cast<std::uint8_t>(id_ >> 8);
  req[5] = static_cast<std::uint8_t>(id_);
  req[6] = static_cast<std::uint8_t>(seq >> 8);
  req[7] = static_cast<std::uint8_t>(seq);
  std::memcpy(req.data() + 8, payload.data(), payload.size());
  const std::uint16_t sum = testing::internet_checksum(req);
  req[2] = static_cast<std::uint8_t>(sum >> 8);
  req[3] = static_cast<std::uint8_t>(sum);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  if (::inet_pton(AF_INET, ip.c_str(), &to.sin_addr) != 1) return false;
  return ::sendto(fd_.get(), req.data(), req.size(), 0, reinterpret_cast<sockaddr*>(&to),
                  sizeof to) == static_cast<ssize_t>(req.size());
}

std::optional<EchoReply> IcmpSocket::receive_reply(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    std::uint8_t buf[65536];
    const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    if (n >= 20) {
      const std::size_t ihl = static_cast<std::size_t>(buf[0] & 0x0f) * 4;
      const std::uint8_t* icmp = buf + ihl;
      if (static_cast<std::size_t>(n) >= ihl + 8 && icmp[0] == 0 &&
          (icmp[4] << 8 | icmp[5]) == id_) {
        char ip[INET_ADDRSTRLEN] = {};
        ::inet_ntop(AF_INET, buf + 12, ip, sizeof ip);
        EchoReply r;
        r.from_ip = ip;
        r.id = id_;
        r.seq = static_cast<std::uint16_t>(icmp[6] << 8 | icmp[7]);
        r.payload.assign(icmp + 8, static_cast<const std::uint8_t*>(buf) + n);
        return r;
      }
      continue;  // someone else's ICMP
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{fd_.get(), POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(left.count()));
  }
}

int IcmpSocket::ping(const std::string& ip, int count, int timeout_ms) {
  int replies = 0;
  for (int i = 0; i < count; ++i) {
    const std::uint16_t seq = next_seq_++;
    const std::vector<std::uint8_t> payload(56, static_cast<std::uint8_t>(seq));
    if (!send_echo(ip, seq, payload)) continue;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (Clock::now() < deadline) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto r = receive_reply(static_cast<int>(left.count()));
      if (r && r->seq == seq && r->from_ip == ip && r->payload == payload) {
        ++replies;
        break;
      }
    }
  }
  return replies;
}

}  // namespace xdpvhost::test_support
