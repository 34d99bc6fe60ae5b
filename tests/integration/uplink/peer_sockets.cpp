#include "peer_sockets.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace xdpvhost::uplink_test {

namespace {

using Clock = std::chrono::steady_clock;

bool wait_readable(int fd, int timeout_ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, timeout_ms) > 0;
}

void force_rcvbuf(int fd, int bytes) {
  if (bytes > 0) ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes);
}

}  // namespace

UdpSocket::UdpSocket(std::uint16_t port, int rcvbuf) {
  fd_.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_) return;
  force_rcvbuf(fd_.get(), rcvbuf);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) fd_.reset();
}

bool UdpSocket::send_to(const std::string& ip, std::uint16_t port,
                        const std::vector<std::uint8_t>& payload) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  if (::inet_pton(AF_INET, ip.c_str(), &to.sin_addr) != 1) return false;
  return ::sendto(fd_.get(), payload.data(), payload.size(), 0, reinterpret_cast<sockaddr*>(&to),
                  sizeof to) == static_cast<ssize_t>(payload.size());
}

std::optional<Datagram> UdpSocket::receive(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    static thread_local std::uint8_t buf[65536];
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t n =
        ::recvfrom(fd_.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n >= 0) {
      char ip[INET_ADDRSTRLEN] = {};
      ::inet_ntop(AF_INET, &from.sin_addr, ip, sizeof ip);
      return Datagram{std::vector<std::uint8_t>(buf, buf + n), ip, ntohs(from.sin_port)};
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return std::nullopt;
    wait_readable(fd_.get(), static_cast<int>(left.count()));
  }
}

std::vector<Datagram> UdpSocket::drain() {
  std::vector<Datagram> out;
  while (auto d = receive(0)) out.push_back(std::move(*d));
  return out;
}

PacketSocket::PacketSocket(const std::string& ifname, std::uint16_t ether_type, int rcvbuf) {
  const int ifindex = static_cast<int>(::if_nametoindex(ifname.c_str()));
  fd_.reset(::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ether_type)));
  if (!fd_ || ifindex == 0) {
    fd_.reset();
    return;
  }
  force_rcvbuf(fd_.get(), rcvbuf);
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ether_type);
  sll.sll_ifindex = ifindex;
  if (::bind(fd_.get(), reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) fd_.reset();
  drops();
}

bool PacketSocket::send(const std::vector<std::uint8_t>& frame) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const ssize_t n = ::send(fd_.get(), frame.data(), frame.size(), 0);
    if (n == static_cast<ssize_t>(frame.size())) return true;
    if (n < 0 && errno != EAGAIN && errno != ENOBUFS) return false;
    ::usleep(100);
  }
  return false;
}

std::vector<std::vector<std::uint8_t>> PacketSocket::receive(std::size_t count, int timeout_ms) {
  std::vector<std::vector<std::uint8_t>> frames;
  while (frames.size() < count) {
    static thread_local std::uint8_t buf[65536];
    sockaddr_ll from{};
    socklen_t len = sizeof from;
    const ssize_t n =
        ::recvfrom(fd_.get(), buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n >= 0) {
      if (from.sll_pkttype == PACKET_OUTGOING) continue;
      frames.emplace_back(buf, buf + n);
      continue;
    }
    if (!wait_readable(fd_.get(), timeout_ms)) break;  // quiet for timeout_ms
  }
  return frames;
}

std::uint64_t PacketSocket::drops() {
  tpacket_stats st{};
  socklen_t len = sizeof st;
  if (::getsockopt(fd_.get(), SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0) return 0;
  return st.tp_drops;
}

}  // namespace xdpvhost::uplink_test
