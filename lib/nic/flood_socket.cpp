#include "nic/flood_socket.hpp"

#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

namespace xdpvhost::nic {

namespace {

// ldb [0]                      ; first byte of the destination MAC
// jset #1, group, drop         ; group bit: broadcast or multicast
// group: ld pkttype            ; SKF_AD_PKTTYPE
// jeq #PACKET_OUTGOING, drop, accept
// accept: ret #0x40000         ; whole frame
// drop: ret #0
sock_filter kFilterCode[] = {
    BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 1, 0, 3),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<__u32>(SKF_AD_OFF + SKF_AD_PKTTYPE)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, 1, 0),
    BPF_STMT(BPF_RET | BPF_K, 0x40000),
    BPF_STMT(BPF_RET | BPF_K, 0),
};
const sock_fprog kFilter{sizeof kFilterCode / sizeof kFilterCode[0], kFilterCode};

}  // namespace

const sock_fprog& FloodSocket::filter() noexcept {
  return kFilter;
}

std::unique_ptr<FloodSocket> FloodSocket::open(const std::string& ifname, std::string& error) {
  const unsigned ifindex = ::if_nametoindex(ifname.c_str());
  if (ifindex == 0) {
    error = "flood socket: interface " + ifname + ": " + std::strerror(errno);
    return nullptr;
  }
  // Protocol 0 until bind(): no frame can be queued before the filter is in.
  sys::UniqueFd fd(::socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    error = std::string("flood socket: socket(AF_PACKET): ") + std::strerror(errno);
    return nullptr;
  }
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_ATTACH_FILTER, &kFilter, sizeof kFilter) != 0) {
    error = std::string("flood socket: SO_ATTACH_FILTER: ") + std::strerror(errno);
    return nullptr;
  }
  const int one = 1;
  (void)::setsockopt(fd.get(), SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
  sockaddr_ll sll{};
  sll.sll_family = AF_PACKET;
  sll.sll_protocol = htons(ETH_P_ALL);
  sll.sll_ifindex = static_cast<int>(ifindex);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sll), sizeof sll) != 0) {
    error = "flood socket: bind to " + ifname + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<FloodSocket> self(new FloodSocket());
  self->fd_ = std::move(fd);
  self->ifindex_ = static_cast<int>(ifindex);
  return self;
}

int FloodSocket::recv_batch(FloodFrame* frames, unsigned n) noexcept {
  constexpr unsigned kMax = 64;
  if (n > kMax) n = kMax;
  iovec iov[kMax];
  mmsghdr msgs[kMax];
  for (unsigned i = 0; i < n; ++i) {
    iov[i].iov_base = frames[i].data;
    iov[i].iov_len = frames[i].capacity;
    std::memset(&msgs[i], 0, sizeof msgs[i]);
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  // MSG_TRUNC: msg_len reports the real frame length even when cut short.
  const int got = ::recvmmsg(fd_.get(), msgs, n, MSG_DONTWAIT | MSG_TRUNC, nullptr);
  if (got < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
  for (int i = 0; i < got; ++i) {
    const std::uint32_t real = msgs[i].msg_len;
    frames[i].truncated = real > frames[i].capacity;
    frames[i].len = frames[i].truncated ? frames[i].capacity : real;
  }
  return got;
}

int FloodSocket::read_and_reset_stats(Stats& out) noexcept {
  tpacket_stats st{};
  socklen_t len = sizeof st;
  if (::getsockopt(fd_.get(), SOL_PACKET, PACKET_STATISTICS, &st, &len) != 0) return -errno;
  out.queued = st.tp_packets - st.tp_drops;  // the kernel counts drops in tp_packets
  out.dropped = st.tp_drops;
  return 0;
}

}  // namespace xdpvhost::nic
