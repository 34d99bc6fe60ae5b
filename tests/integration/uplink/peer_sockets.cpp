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

std::uint16_t inet_checksum(const std::uint8_t* data, std::size_t len) {
  std::uint32_t sum = 0;
  for (std::size_t i = 0; i + 1 < len; i += 2)
    sum += static_cast<std::uint32_t>(data[i] << 8 | data[i + 1]);
  if (len & 1) sum += static_cast<std::uint32_t>(data[len - 1] << 8);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum);
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
  const std::uint16_t sum = inet_checksum(req.data(), req.size());
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
    wait_readable(fd_.get(), static_cast<int>(left.count()));
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
