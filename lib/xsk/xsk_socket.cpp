#include "xsk/xsk_socket.hpp"

#include <net/if.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sys/enum_names.hpp"
#include "xsk/ring_mapping.hpp"

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif

namespace xdpvhost::xsk {

namespace {

constexpr sys::EnumNames<WakeupResult, 6> kWakeupNames{{
    {WakeupResult::kOk, "ok"},
    {WakeupResult::kAgain, "again"},
    {WakeupResult::kBusy, "busy"},
    {WakeupResult::kNoBuffers, "no_buffers"},
    {WakeupResult::kNetDown, "net_down"},
    {WakeupResult::kError, "error"},
}};
static_assert(sys::in_enum_order(kWakeupNames, 6));

}  // namespace

const char* to_string(WakeupResult result) {
  return sys::name_of(kWakeupNames, result);
}

namespace {

int bind(int fd, int ifindex, const XskSocketConfig& config, std::uint16_t mode_flag, bool sg) {
  sockaddr_xdp addr{};
  addr.sxdp_family = AF_XDP;
  addr.sxdp_flags = static_cast<std::uint16_t>(
      mode_flag | (config.need_wakeup ? XDP_USE_NEED_WAKEUP : 0) | (sg ? kBindUseSg : 0));
  addr.sxdp_ifindex = static_cast<std::uint32_t>(ifindex);
  addr.sxdp_queue_id = config.queue_id;
  return ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0 ? 0 : -errno;
}

// One bind the socket tries: a mode, with or without XDP_USE_SG.
struct BindAttempt {
  std::uint16_t mode_flag;
  bool sg;
};

// In order: zero-copy before copy, and (when asked for) multi-buffer
// before single-buffer in either -- copy mode with multi-buffer carries
// long packets that zero-copy without it would drop.
std::uint32_t bind_attempts(const XskSocketConfig& config, BindAttempt (&out)[4]) {
  std::uint32_t n = 0;
  const bool zc = config.bind_mode != BindMode::kCopy;
  const bool copy = config.bind_mode != BindMode::kZeroCopy;
  if (config.multi_buffer) {
    if (zc) out[n++] = {XDP_ZEROCOPY, true};
    if (copy) out[n++] = {XDP_COPY, true};
  }
  if (zc) out[n++] = {XDP_ZEROCOPY, false};
  if (copy) out[n++] = {XDP_COPY, false};
  return n;
}

}  // namespace

std::unique_ptr<XskSocket> XskSocket::create(Umem& umem, const XskSocketConfig& config,
                                             std::string& error) {
  if (umem.socket_bound()) {
    error = "xsk: this UMEM already served a socket; create a new Umem";
    return nullptr;
  }
  const unsigned ifindex = ::if_nametoindex(config.ifname.c_str());
  if (ifindex == 0) {
    error = "xsk: interface " + config.ifname + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<XskSocket> sock(new XskSocket(umem, config));
  sock->ifindex_ = static_cast<int>(ifindex);
  // The RX and TX rings on the UMEM's socket, once: a refused bind leaves
  // the socket unbound, and the next attempt binds it with other flags.
  if (!map_consumer_ring(umem.fd(), XDP_RX_RING, XDP_PGOFF_RX_RING, config.rx_size,
                         sizeof(xdp_desc), "rx", sock->rx_map_, sock->rx_, error) ||
      !map_producer_ring(umem.fd(), XDP_TX_RING, XDP_PGOFF_TX_RING, config.tx_size,
                         sizeof(xdp_desc), "tx", sock->tx_map_, sock->tx_, error))
    return nullptr;

  BindAttempt attempts[4];
  const std::uint32_t count = bind_attempts(config, attempts);
  std::string zc_refusal;  // why zero-copy was refused (its first attempt)
  std::string sg_refusal;  // why multi-buffer was refused (the last attempt with it)
  std::string last_refusal;
  const BindAttempt* bound = nullptr;
  for (std::uint32_t i = 0; i < count; ++i) {
    const BindAttempt& a = attempts[i];
    const int err = bind(umem.fd(), sock->ifindex_, config, a.mode_flag, a.sg);
    if (err == 0) {
      bound = &a;
      break;
    }
    last_refusal = std::strerror(-err);
    if (a.mode_flag == XDP_ZEROCOPY && zc_refusal.empty()) zc_refusal = last_refusal;
    if (a.sg) sg_refusal = last_refusal;
    // Another socket holds the queue (or ours of a moment ago, which the
    // kernel has not released yet): no other flags help, and binding without
    // multi-buffer in that moment would lose it for good. Tried again later.
    if (err == -EBUSY) break;
  }
  const std::string where = "xsk: " + config.ifname + " queue " + std::to_string(config.queue_id);
  if (bound == nullptr) {
    if (config.bind_mode == BindMode::kZeroCopy) {
      error = where + ": zero-copy bind refused: " + last_refusal;
    } else {
      error = where + ": copy-mode bind refused: " + last_refusal;
      if (!zc_refusal.empty()) error += " (zero-copy refused: " + zc_refusal + ")";
    }
    if (config.multi_buffer) error += " (multi-buffer refused: " + sg_refusal + ")";
    return nullptr;
  }
  sock->multi_buffer_ = bound->sg;
  umem.note_socket_bound();

  xdp_options opts{};
  socklen_t len = sizeof opts;
  if (::getsockopt(sock->fd(), SOL_XDP, XDP_OPTIONS, &opts, &len) != 0) {
    error = std::string("xsk: getsockopt(XDP_OPTIONS): ") + std::strerror(errno);
    return nullptr;
  }
  sock->zero_copy_ = (opts.flags & XDP_OPTIONS_ZEROCOPY) != 0;
  if (sock->multi_buffer_ && !sock->zero_copy_)
    sock->tx_max_packet_descriptors_ = kCopyModeMaxTxDescriptors;
  sock->bind_report_ = sock->zero_copy_ ? "zerocopy" : "copy";
  if (sock->multi_buffer_) sock->bind_report_ += ", multi-buffer";
  if (config.multi_buffer && !sock->multi_buffer_)
    sock->bind_report_ += " (multi-buffer refused: " + sg_refusal + ")";
  if (!sock->zero_copy_ && !zc_refusal.empty())
    sock->bind_report_ += " (zerocopy refused: " + zc_refusal + ")";
  return sock;
}

WakeupResult XskSocket::classify(long ret) noexcept {
  if (ret >= 0) return WakeupResult::kOk;
  last_errno_ = errno;
  switch (last_errno_) {
    case EAGAIN:
      return WakeupResult::kAgain;
    case EBUSY:
      return WakeupResult::kBusy;
    case ENOBUFS:
      return WakeupResult::kNoBuffers;
    case ENETDOWN:
      return WakeupResult::kNetDown;
    default:
      return WakeupResult::kError;
  }
}

std::uint32_t XskSocket::rx_peek_packets(std::uint32_t n, std::uint32_t& idx) noexcept {
  const auto options_at = [&](std::uint32_t i) { return rx_desc(idx + i).options; };
  // The common case: libxdp's peek (an acquire load of the producer index
  // when the cached entries are used up), ending at a packet boundary.
  std::uint32_t got = rx_peek(n, idx);
  std::uint32_t whole = whole_packet_descriptors(got, options_at);
  if (whole == got) return got;
  rx_cancel(got - whole);
  if (whole != 0) return whole;
  // No packet end among them. libxdp refreshes its cached producer index
  // only once the cached entries are all consumed, which a cancelled tail
  // never is: read it again ourselves (acquire: the descriptors the kernel
  // published before it are visible) and look at everything there is.
  rx_.cached_prod = __atomic_load_n(rx_.producer, __ATOMIC_ACQUIRE);
  got = rx_peek(config_.rx_size, idx);
  whole = whole_packet_descriptors(std::min(got, n), options_at);
  if (whole == 0) whole = rx_packet(idx, got).descriptors;  // one packet longer than n
  rx_cancel(got - whole);
  return whole;
}

WakeupResult XskSocket::kick_tx() noexcept {
  return classify(::sendto(fd(), nullptr, 0, MSG_DONTWAIT, nullptr, 0));
}

WakeupResult XskSocket::wakeup_rx() noexcept {
  return classify(::recvfrom(fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr));
}

int XskSocket::read_statistics(XskStatistics& out) const noexcept {
  xdp_statistics st{};
  socklen_t len = sizeof st;
  if (::getsockopt(fd(), SOL_XDP, XDP_STATISTICS, &st, &len) != 0) return -errno;
  out = XskStatistics{};
  out.rx_dropped = st.rx_dropped;
  out.rx_invalid_descs = st.rx_invalid_descs;
  out.tx_invalid_descs = st.tx_invalid_descs;
  // Kernels before 5.9 return only the first three counters.
  if (len >= sizeof st) {
    out.rx_ring_full = st.rx_ring_full;
    out.rx_fill_ring_empty_descs = st.rx_fill_ring_empty_descs;
    out.tx_ring_empty_descs = st.tx_ring_empty_descs;
  }
  return 0;
}

int XskSocket::set_tx_budget(std::uint32_t descriptors) noexcept {
  const int value = static_cast<int>(descriptors);
  if (::setsockopt(fd(), SOL_XDP, XDP_MAX_TX_SKB_BUDGET, &value, sizeof value) != 0) return -errno;
  return 0;
}

}  // namespace xdpvhost::xsk
