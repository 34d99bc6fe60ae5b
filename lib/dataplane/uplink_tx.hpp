#pragma once
// An uplink queue's transmit direction, guests -> NIC: a frame copied into
// UMEM frames (one, or with multi-buffer a chain) and put on the AF_XDP
// socket's TX ring; a frame with an offload segmented straight into UMEM
// frames, its checksums left to the kernel through TX metadata where it
// can, finished in software otherwise. Submitted once per burst (and every
// tx_burst descriptors within one), sendto() only when the kernel needs it.
// At most tx_inflight_max UMEM frames between TX and completion: beyond
// that a unicast sender is told to wait (can_accept), a flood is dropped.

#include <cstdint>
#include <vector>

#include "dataplane/frame.hpp"
#include "dataplane/uplink_queue.hpp"
#include "net/byte_spans.hpp"

namespace xdpvhost::dataplane {

class UplinkTx {
 public:
  explicit UplinkTx(UplinkQueue& queue) : q_(queue) {}

  // A socket was bound: the scratch buffer and the checksum path follow it.
  void bound();

  // Whether this frame would be taken now (see Port::can_accept).
  bool can_accept(const Frame& frame) const noexcept;
  // Onto the TX ring, or counted why not.
  void deliver(const Frame& frame);
  // End of a burst: submit what was put on the ring, kick if needed.
  void end_burst();
  // Every frame taken was handed to the kernel: nothing is left on the TX
  // ring (or written and not submitted) to leave after later frames.
  bool settled() const noexcept {
    return reserved_ == 0 && (!q_.socket || q_.socket->tx_pending() == 0);
  }
  // Checksums go to the kernel through TX metadata (status().tx_checksum_offload).
  bool checksum_offload() const noexcept { return checksum_offload_; }

 private:
  // Room for `descriptors` more UMEM frames between TX and completion, and
  // on the ring.
  bool has_room(std::uint32_t descriptors) const noexcept;
  // UMEM frames a frame of `len` bytes takes on TX.
  std::uint32_t descriptors_for(std::uint32_t len) const noexcept;
  // TX descriptors a frame of the guests takes here: one chain per segment,
  // each as long as the headers and gso_size.
  std::uint32_t frame_descriptors(const Frame& frame) const noexcept;
  // Whether a segment (or frame) of `len` bytes can leave through this
  // queue: within max_frame, in one UMEM frame or a chain the socket takes.
  bool segment_fits(std::uint32_t len) const noexcept;
  // The most descriptors this queue ever has room for at once; a frame that
  // needs more never fits (dropped as oversize, not waited for).
  std::uint32_t capacity() const noexcept;
  // Room for a frame of `descriptors` now; if not, the drop is counted
  // (oversize if it never fits, uplink_tx_full if only not now).
  bool admit(std::uint32_t descriptors) noexcept;
  // One packet, already in UMEM frames addrs[0..descriptors), onto the TX
  // ring (a chain with XDP_PKT_CONTD when several).
  // `first_options`: xsk::kTxMetadataOption when the metadata before the
  // first frame's data asks for a checksum.
  void put(const std::uint64_t* addrs, const std::uint32_t* lens, std::uint32_t descriptors,
           std::uint32_t len, std::uint32_t first_options = 0);
  // `bytes` copied into as many UMEM frames as it needs and put on TX;
  // false if the socket cannot send a chain that long.
  bool put_copy(const net::ByteSpans& bytes);
  void deliver_offloaded(const Frame& frame);
  void kick() noexcept;

  UplinkQueue& q_;
  // Checksums of frames that fit one UMEM frame go to the kernel through TX
  // metadata: the UMEM has the room, and the socket is in copy mode (the
  // kernel's skb takes CHECKSUM_PARTIAL on any device; a zero-copy driver
  // may not implement the request, and its capability is not read yet).
  bool checksum_offload_ = false;
  std::uint32_t reserved_ = 0;  // descriptors written but not submitted
  // A jumbo GSO segment before it is cut into UMEM frames.
  static constexpr std::uint32_t kMaxJumboFrame = 65536;
  std::vector<std::uint8_t> scratch_;
};

}  // namespace xdpvhost::dataplane
