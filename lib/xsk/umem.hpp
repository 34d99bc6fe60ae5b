#pragma once
// The UMEM of one AF_XDP socket: the frame area (anonymous mmap, optionally
// on huge pages), its registration with the kernel (XDP_UMEM_REG on the
// AF_XDP socket this Umem owns; with TX metadata room where asked for and
// the kernel takes it, see tx_metadata.hpp), and the two rings that belong
// to a UMEM -- FILL (we produce free frames for RX) and COMPLETION (the
// kernel returns frames whose TX finished). Thin inline wrappers over
// libxdp's <xdp/xsk.h> ring helpers; no syscalls on the ring paths.
//
// Lifetime: one Umem serves exactly one XskSocket, which is bound on the
// Umem's own socket fd (as libxdp binds the first socket of a UMEM); to
// recover an uplink, create a new Umem and socket. Destroy the socket
// before the Umem. Closing the fd (first, in the destructor) ends the
// kernel's use of the area before it is unmapped.
//
// Threading: the rings are single-producer/single-consumer; only the service
// thread that owns the socket may call the ring methods.

#include <xdp/xsk.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sys/memory_mapping.hpp"
#include "sys/unique_fd.hpp"
#include "xsk/frame_pool.hpp"

namespace xdpvhost::xsk {

struct UmemConfig {
  std::uint32_t frame_size = 2048;   // 2048 or 4096
  std::uint32_t frame_count = 4096;  // frames in the area (RX and TX share them)
  std::uint32_t fill_size = 2048;    // ring entries, power of two
  std::uint32_t comp_size = 2048;    // ring entries, power of two
  std::uint32_t frame_headroom = 0;  // bytes the kernel leaves free before RX data
  bool hugepages = false;            // try MAP_HUGETLB first; falls back (reported)
  // Reserve kTxMetadataLen bytes before every TX descriptor for AF_XDP TX
  // metadata (checksum offload). Where the kernel refuses (before Linux
  // 6.11) the UMEM is registered without it: tx_metadata() says which.
  bool tx_metadata = false;
};

class Umem {
 public:
  // Maps and registers the area. Returns nullptr and sets `error` on failure.
  static std::unique_ptr<Umem> create(const UmemConfig& config, std::string& error);
  ~Umem() = default;
  Umem(const Umem&) = delete;
  Umem& operator=(const Umem&) = delete;

  const UmemConfig& config() const noexcept { return config_; }
  // Longest frame the kernel can place in one UMEM frame on RX: it starts
  // XDP_PACKET_HEADROOM (256) + frame_headroom bytes into the frame (the RX
  // descriptor's addr points at the data). Longer frames are dropped and
  // counted in XskStatistics::rx_dropped. 1792 for 2048-byte frames.
  std::uint32_t max_rx_frame_len() const noexcept;
  bool on_hugepages() const noexcept { return on_hugepages_; }
  std::uint8_t* area() const noexcept { return area_.data(); }
  std::size_t area_size() const noexcept { return area_.size(); }
  // Registered with TX metadata room: every TX descriptor starts
  // tx_offset() bytes into its frame, and may carry kTxMetadataOption.
  bool tx_metadata() const noexcept { return tx_offset_ != 0; }
  // Why not, when asked for ("" otherwise).
  const std::string& tx_metadata_refusal() const noexcept { return tx_metadata_refusal_; }
  // Where TX data starts in a frame, and how many bytes it may hold there.
  std::uint32_t tx_offset() const noexcept { return tx_offset_; }
  std::uint32_t tx_room() const noexcept { return config_.frame_size - tx_offset_; }
  // Pointer to the byte at UMEM offset addr (a descriptor's addr field).
  std::uint8_t* data(std::uint64_t addr) const noexcept { return area_.data() + addr; }
  FramePool& frames() noexcept { return frames_; }
  const FramePool& frames() const noexcept { return frames_; }

  // --- FILL ring (producer: us) ---
  // Free slots, refreshing the cached consumer index if fewer than `want`.
  std::uint32_t fill_free(std::uint32_t want) noexcept { return xsk_prod_nb_free(&fill_, want); }
  // Reserves exactly n slots (all or nothing); returns n or 0. idx is the
  // first slot for fill_set().
  std::uint32_t fill_reserve(std::uint32_t n, std::uint32_t& idx) noexcept {
    return xsk_ring_prod__reserve(&fill_, n, &idx);
  }
  void fill_set(std::uint32_t idx, std::uint64_t addr) noexcept {
    *xsk_ring_prod__fill_addr(&fill_, idx) = addr;
  }
  // Publishes n reserved slots (store-release of the producer index).
  void fill_submit(std::uint32_t n) noexcept { xsk_ring_prod__submit(&fill_, n); }
  // The kernel asks for a syscall (recvfrom/poll) before it uses new fill
  // entries (zero-copy drivers with XDP_USE_NEED_WAKEUP).
  bool fill_needs_wakeup() const noexcept { return xsk_ring_prod__needs_wakeup(&fill_) != 0; }
  // Frames in the fill ring the kernel has not taken yet.
  std::uint32_t fill_level() const noexcept {
    return *fill_.producer - __atomic_load_n(fill_.consumer, __ATOMIC_ACQUIRE);
  }
  // Moves up to max frames from the pool into the fill ring; returns how many.
  std::uint32_t refill(std::uint32_t max) noexcept;

  // --- COMPLETION ring (consumer: us) ---
  // Up to n completed entries; idx is the first for comp_addr().
  std::uint32_t comp_peek(std::uint32_t n, std::uint32_t& idx) noexcept {
    return xsk_ring_cons__peek(&comp_, n, &idx);
  }
  std::uint64_t comp_addr(std::uint32_t idx) const noexcept {
    return *xsk_ring_cons__comp_addr(&comp_, idx);
  }
  // Hands n peeked entries back to the kernel (store-release of the consumer).
  void comp_release(std::uint32_t n) noexcept {
    xsk_ring_cons__release(&comp_, n);
    tx_in_flight_ -= n;
  }
  // Peeks up to max completions, frees their frames to the pool, releases
  // them; returns how many.
  std::uint32_t reclaim_completions(std::uint32_t max) noexcept;

  // Frames submitted on the TX ring whose completion has not been released
  // yet (kept by XskSocket::tx_submit and comp_release) -- the bound the
  // service thread enforces as its bound on frames in flight.
  std::uint32_t tx_in_flight() const noexcept { return tx_in_flight_; }
  void note_tx_submitted(std::uint32_t n) noexcept { tx_in_flight_ += n; }

  // For XskSocket: the AF_XDP socket the UMEM is registered on, which the
  // XskSocket binds.
  int fd() const noexcept { return fd_.get(); }
  void note_socket_bound() noexcept { socket_bound_ = true; }
  bool socket_bound() const noexcept { return socket_bound_; }

 private:
  Umem(const UmemConfig& config, sys::MemoryMapping area, bool hugepages);
  bool register_area(std::string& error);

  UmemConfig config_;
  sys::MemoryMapping area_;
  bool on_hugepages_;
  FramePool frames_;
  sys::MemoryMapping fill_map_;
  sys::MemoryMapping comp_map_;
  sys::UniqueFd fd_;  // after the mappings: closed before they are unmapped
  xsk_ring_prod fill_{};
  xsk_ring_cons comp_{};
  std::uint32_t tx_offset_ = 0;
  std::string tx_metadata_refusal_;
  std::uint32_t tx_in_flight_ = 0;
  bool socket_bound_ = false;
};

}  // namespace xdpvhost::xsk
