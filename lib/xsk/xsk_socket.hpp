#pragma once
// One AF_XDP socket bound to (interface, queue) with its RX and TX rings:
// the UMEM's own socket (Umem), its rings mapped as libxdp maps them
// (ring_mapping.hpp) and bound here. The XDP program is ours
// (nic::XdpProgram), and the caller puts fd() into its xsks_map.
//
// Bind mode: kAuto tries XDP_ZEROCOPY and falls back to XDP_COPY; the mode
// the kernel actually uses is read back with getsockopt(XDP_OPTIONS) and
// reported by zero_copy() / bind_report(), never assumed.
//
// Multi-buffer (XskSocketConfig::multi_buffer, XDP_USE_SG, Linux 6.6+): a
// packet longer than one UMEM frame's room travels as a chain of
// descriptors (descriptor_chain.hpp). RX: rx_peek_packets() hands out whole
// packets only, rx_packet() measures one. TX: tx_reserve_packet() +
// tx_packet_desc() + tx_submit(). The single-descriptor calls (rx_peek,
// tx_reserve, tx_desc) work as before; a socket without multi-buffer never
// sees a chain.
//
// Threading: the rings are SPSC; only the owning service thread may use the
// ring methods, kick_tx() and wakeup_rx().

#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "xsk/bind_mode.hpp"
#include "xsk/descriptor_chain.hpp"
#include "xsk/umem.hpp"

namespace xdpvhost::xsk {

struct XskSocketConfig {
  std::string ifname;
  std::uint32_t queue_id = 0;
  std::uint32_t rx_size = 2048;  // ring entries, power of two
  std::uint32_t tx_size = 2048;  // ring entries, power of two
  BindMode bind_mode = BindMode::kAuto;
  bool need_wakeup = true;  // XDP_USE_NEED_WAKEUP
  // XDP_USE_SG: packets longer than one UMEM frame's room arrive and leave
  // as chains of descriptors. Where the kernel refuses it (EINVAL before
  // Linux 6.6; zero-copy on a driver without zero-copy multi-buffer) the
  // socket is bound without it -- kAuto tries zero-copy with it, then copy
  // with it, then both without -- and multi_buffer() / bind_report() say
  // so. Without it the kernel drops such packets (rx_dropped).
  bool multi_buffer = false;
};

// getsockopt(XDP_STATISTICS); all counters since the socket was created.
struct XskStatistics {
  std::uint64_t rx_dropped = 0;                // no fill frame, frame too big, ...
  std::uint64_t rx_invalid_descs = 0;          // bad fill ring entries
  std::uint64_t tx_invalid_descs = 0;          // bad TX descriptors
  std::uint64_t rx_ring_full = 0;              // RX ring had no room
  std::uint64_t rx_fill_ring_empty_descs = 0;  // kernel found the fill ring empty
  std::uint64_t tx_ring_empty_descs = 0;       // kernel found the TX ring empty (zero-copy)

  XskStatistics& operator+=(const XskStatistics& s) noexcept {
    rx_dropped += s.rx_dropped;
    rx_invalid_descs += s.rx_invalid_descs;
    tx_invalid_descs += s.tx_invalid_descs;
    rx_ring_full += s.rx_ring_full;
    rx_fill_ring_empty_descs += s.rx_fill_ring_empty_descs;
    tx_ring_empty_descs += s.tx_ring_empty_descs;
    return *this;
  }
  friend XskStatistics operator+(XskStatistics a, const XskStatistics& b) noexcept {
    return a += b;
  }
};

// Outcome of one sendto()/recvfrom() wakeup, after
// Documentation/networking/af_xdp.rst and net/xdp/xsk.c.
enum class WakeupResult : std::uint8_t {
  kOk,         // the kernel took what it could
  kAgain,      // EAGAIN: copy-mode batch budget used up, completion ring full or
               // driver busy; descriptors stay on the ring -- kick again later
  kBusy,       // EBUSY: a frame was completed but dropped by the device
  kNoBuffers,  // ENOBUFS: socket has no such ring / out of buffers; retry later
  kNetDown,    // ENETDOWN: interface is down -- recover the uplink
  kError,      // anything else (errno in last_errno())
};
const char* to_string(WakeupResult result);

class XskSocket {
 public:
  // Binds a socket on umem (which must not have served a socket before).
  // Returns nullptr and sets `error` on failure.
  static std::unique_ptr<XskSocket> create(Umem& umem, const XskSocketConfig& config,
                                           std::string& error);
  ~XskSocket() = default;
  XskSocket(const XskSocket&) = delete;
  XskSocket& operator=(const XskSocket&) = delete;

  int fd() const noexcept { return umem_.fd(); }
  const XskSocketConfig& config() const noexcept { return config_; }
  int ifindex() const noexcept { return ifindex_; }
  Umem& umem() noexcept { return umem_; }
  // Zero-copy as reported by the kernel (XDP_OPTIONS_ZEROCOPY).
  bool zero_copy() const noexcept { return zero_copy_; }
  // Bound with XDP_USE_SG (the kernel took the flag; kernels that do not
  // know it refuse the bind with EINVAL, so success is the answer).
  bool multi_buffer() const noexcept { return multi_buffer_; }
  // E.g. "copy (zerocopy refused: Operation not supported)", "copy,
  // multi-buffer (zerocopy refused: ...)", "copy (multi-buffer refused:
  // Invalid argument)".
  const std::string& bind_report() const noexcept { return bind_report_; }

  // --- RX ring (consumer: us) ---
  std::uint32_t rx_peek(std::uint32_t n, std::uint32_t& idx) noexcept {
    return xsk_ring_cons__peek(&rx_, n, &idx);
  }
  const xdp_desc& rx_desc(std::uint32_t idx) const noexcept {
    return *xsk_ring_cons__rx_desc(&rx_, idx);
  }
  void rx_release(std::uint32_t n) noexcept { xsk_ring_cons__release(&rx_, n); }
  // Descriptors the kernel has produced that we have not released.
  std::uint32_t rx_pending() const noexcept {
    return __atomic_load_n(rx_.producer, __ATOMIC_ACQUIRE) - *rx_.consumer;
  }
  // Gives back the last n descriptors peeked and not released: the next
  // peek returns them again. Moves only our cached consumer index; nothing
  // is published. Needed whenever fewer descriptors are released than were
  // peeked (libxdp's next peek starts after the last one peeked).
  void rx_cancel(std::uint32_t n) noexcept { xsk_ring_cons__cancel(&rx_, n); }

  // --- RX of whole packets (multi-buffer) ---
  // rx_peek that never ends inside a packet: peeks up to n descriptors and
  // gives back (rx_cancel) those of a trailing packet whose last descriptor
  // is not among them, so that packet comes again, whole, with a later
  // peek. If the peeked descriptors hold no packet end, the producer index
  // is read again (acquire) and the ring looked at in full, so a packet
  // longer than n is returned alone rather than stuck. Returns how many
  // descriptors the whole packets span (0: no packet complete yet); walk
  // them with rx_packet() and rx_desc(), release them with rx_release().
  std::uint32_t rx_peek_packets(std::uint32_t n, std::uint32_t& idx) noexcept;
  // The packet whose first descriptor is at idx, with `avail` peeked
  // descriptors from idx on: how many descriptors it spans (0 if its end is
  // not among them) and its total length.
  PacketExtent rx_packet(std::uint32_t idx, std::uint32_t avail) const noexcept {
    return packet_extent(0, avail,
                         [&](std::uint32_t i) -> const xdp_desc& { return rx_desc(idx + i); });
  }

  // --- TX ring (producer: us) ---
  std::uint32_t tx_free(std::uint32_t want) noexcept { return xsk_prod_nb_free(&tx_, want); }
  std::uint32_t tx_reserve(std::uint32_t n, std::uint32_t& idx) noexcept {
    return xsk_ring_prod__reserve(&tx_, n, &idx);
  }
  xdp_desc& tx_desc(std::uint32_t idx) noexcept { return *xsk_ring_prod__tx_desc(&tx_, idx); }
  // Publishes n reserved descriptors (one store-release of the producer
  // index, so every descriptor written before is visible to the kernel
  // first) and counts them in umem().tx_in_flight(). With multi-buffer
  // packets n must end at a packet's last descriptor: descriptors published
  // together are seen together, which is what makes a packet atomic.
  void tx_submit(std::uint32_t n) noexcept {
    xsk_ring_prod__submit(&tx_, n);
    umem_.note_tx_submitted(n);
  }

  // --- TX of multi-descriptor packets (multi-buffer) ---
  // Most descriptors one TX packet may span: 1 without multi-buffer; copy
  // mode with it MAX_SKB_FRAGS + 1 (kCopyModeMaxTxDescriptors, 18; a longer
  // chain is dropped whole by the kernel and counted in tx_invalid_descs);
  // zero-copy with it 1 until set_tx_max_packet_descriptors() is given the
  // driver's limit (NETDEV_A_DEV_XDP_ZC_MAX_SEGS).
  std::uint32_t tx_max_packet_descriptors() const noexcept { return tx_max_packet_descriptors_; }
  void set_tx_max_packet_descriptors(std::uint32_t n) noexcept {
    if (multi_buffer_ && n != 0) tx_max_packet_descriptors_ = n;
  }
  // Reserves `descriptors` consecutive TX slots for one packet, all or
  // nothing (tx_reserve). Returns `descriptors`, or 0 -- nothing reserved --
  // when the ring lacks room, descriptors is 0 or it exceeds
  // tx_max_packet_descriptors().
  std::uint32_t tx_reserve_packet(std::uint32_t descriptors, std::uint32_t& idx) noexcept {
    if (descriptors == 0 || descriptors > tx_max_packet_descriptors_) return 0;
    return tx_reserve(descriptors, idx);
  }
  // Writes descriptor i of `count` of the packet reserved at idx (slot
  // idx + i): addr, len (> 0: the kernel refuses empty descriptors) and
  // XDP_PKT_CONTD on every descriptor but the last. Plain stores; tx_submit
  // publishes them.
  // `first_options` go on descriptor 0 only (kTxMetadataOption: the
  // kernel reads a packet's metadata before its first descriptor).
  void tx_packet_desc(std::uint32_t idx, std::uint32_t i, std::uint32_t count, std::uint64_t addr,
                      std::uint32_t len, std::uint32_t first_options = 0) noexcept {
    xdp_desc& d = tx_desc(idx + i);
    d.addr = addr;
    d.len = len;
    d.options = tx_options(i, count) | (i == 0 ? first_options : 0);
  }
  bool tx_needs_wakeup() const noexcept { return xsk_ring_prod__needs_wakeup(&tx_) != 0; }
  // Submitted descriptors the kernel has not consumed yet.
  std::uint32_t tx_pending() const noexcept {
    return *tx_.producer - __atomic_load_n(tx_.consumer, __ATOMIC_ACQUIRE);
  }
  // Whether kick_tx() is needed for the kernel to send what is on the ring:
  // zero-copy (or no need_wakeup): the ring's need_wakeup flag; copy mode:
  // whenever descriptors are pending -- in copy mode frames are only ever
  // sent inside sendto(), at most a bounded batch per call.
  bool tx_kick_needed() const noexcept {
    if (zero_copy_ && config_.need_wakeup) return tx_needs_wakeup();
    return tx_pending() != 0;
  }

  // sendto(fd, NULL, 0, MSG_DONTWAIT): lets the kernel send from the TX ring.
  WakeupResult kick_tx() noexcept;
  // recvfrom(fd, NULL, 0, MSG_DONTWAIT): wakes RX (zero-copy need_wakeup) and,
  // with busy polling enabled, drives the NIC's NAPI once.
  WakeupResult wakeup_rx() noexcept;
  int last_errno() const noexcept { return last_errno_; }

  // 0 or -errno.
  int read_statistics(XskStatistics& out) const noexcept;
  // XDP_MAX_TX_SKB_BUDGET (Linux 6.17+): descriptors one copy-mode sendto()
  // may send (kernel default 32, range [32, tx_size]). 0 or -errno.
  int set_tx_budget(std::uint32_t descriptors) noexcept;

 private:
  XskSocket(Umem& umem, const XskSocketConfig& config) : umem_(umem), config_(config) {}
  WakeupResult classify(long ret) noexcept;

  Umem& umem_;
  XskSocketConfig config_;
  sys::MemoryMapping rx_map_;
  sys::MemoryMapping tx_map_;
  xsk_ring_cons rx_{};
  xsk_ring_prod tx_{};
  int ifindex_ = 0;
  bool zero_copy_ = false;
  bool multi_buffer_ = false;
  std::uint32_t tx_max_packet_descriptors_ = 1;
  std::string bind_report_;
  int last_errno_ = 0;
};

}  // namespace xdpvhost::xsk
