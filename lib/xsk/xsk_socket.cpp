#include "xsk/xsk_socket.hpp"

#include <net/if.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#ifndef SOL_XDP
#define SOL_XDP 283
#endif
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9
#endif

namespace xdpvhost::xsk {

const char* to_string(WakeupResult result) {
  switch (result) {
    case WakeupResult::kOk:
      return "ok";
    case WakeupResult::kAgain:
      return "again";
    case WakeupResult::kBusy:
      return "busy";
    case WakeupResult::kNoBuffers:
      return "no_buffers";
    case WakeupResult::kNetDown:
      return "net_down";
    case WakeupResult::kError:
      return "error";
  }
  return "unknown";
}

namespace {

int bind(Umem& umem, const XskSocketConfig& config, std::uint16_t mode_flag, xsk_socket** xsk,
         xsk_ring_cons* rx, xsk_ring_prod* tx) {
  xsk_socket_config cfg{};
  cfg.rx_size = config.rx_size;
  cfg.tx_size = config.tx_size;
  cfg.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
  cfg.xdp_flags = 0;
  cfg.bind_flags =
      static_cast<std::uint16_t>(mode_flag | (config.need_wakeup ? XDP_USE_NEED_WAKEUP : 0));
  return xsk_socket__create(xsk, config.ifname.c_str(), config.queue_id, umem.handle(), rx, tx,
                            &cfg);
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

  std::string zc_refusal;
  int err = -EINVAL;
  if (config.bind_mode != BindMode::kCopy) {
    err = bind(umem, config, XDP_ZEROCOPY, &sock->xsk_, &sock->rx_, &sock->tx_);
    if (err != 0) {
      zc_refusal = std::strerror(-err);
      sock->xsk_ = nullptr;
      if (config.bind_mode == BindMode::kZeroCopy) {
        error = "xsk: " + config.ifname + " queue " + std::to_string(config.queue_id) +
                ": zero-copy bind refused: " + zc_refusal;
        return nullptr;
      }
    }
  }
  if (sock->xsk_ == nullptr) {
    err = bind(umem, config, XDP_COPY, &sock->xsk_, &sock->rx_, &sock->tx_);
    if (err != 0) {
      sock->xsk_ = nullptr;
      error = "xsk: " + config.ifname + " queue " + std::to_string(config.queue_id) +
              ": copy-mode bind refused: " + std::strerror(-err);
      if (!zc_refusal.empty()) error += " (zero-copy refused: " + zc_refusal + ")";
      return nullptr;
    }
  }
  umem.note_socket_bound();

  xdp_options opts{};
  socklen_t len = sizeof opts;
  if (::getsockopt(sock->fd(), SOL_XDP, XDP_OPTIONS, &opts, &len) != 0) {
    error = std::string("xsk: getsockopt(XDP_OPTIONS): ") + std::strerror(errno);
    return nullptr;
  }
  sock->zero_copy_ = (opts.flags & XDP_OPTIONS_ZEROCOPY) != 0;
  sock->bind_report_ = sock->zero_copy_ ? "zerocopy" : "copy";
  if (!zc_refusal.empty()) sock->bind_report_ += " (zerocopy refused: " + zc_refusal + ")";
  return sock;
}

XskSocket::~XskSocket() {
  if (xsk_ != nullptr) xsk_socket__delete(xsk_);
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
