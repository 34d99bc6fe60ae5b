#include "dataplane/uplink_tx.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "dataplane/port.hpp"
#include "net/gso_segmenter.hpp"
#include "xsk/tx_metadata.hpp"

namespace xdpvhost::dataplane {

void UplinkTx::bound() {
  reserved_ = 0;
  // Jumbo segments are made here before they are cut into UMEM frames.
  scratch_.resize(q_.socket->multi_buffer() ? kMaxJumboFrame : 0);
  checksum_offload_ = q_.umem->tx_metadata() && !q_.socket->zero_copy();
}

bool UplinkTx::has_room(std::uint32_t descriptors) const noexcept {
  // A bound on frames in flight (docs/techniques.md) between TX and completion.
  if (q_.umem->tx_in_flight() + reserved_ + descriptors > q_.options.tunables.tx_inflight_max)
    return false;
  return q_.umem->frames().available() >= descriptors &&
         q_.socket->tx_free(descriptors) >= descriptors;
}

std::uint32_t UplinkTx::descriptors_for(std::uint32_t len) const noexcept {
  return xsk::descriptors_for(len, q_.umem->tx_room());
}

std::uint32_t UplinkTx::frame_descriptors(const Frame& frame) const noexcept {
  if (!frame.needs_offload()) return descriptors_for(frame.len);
  return frame.offload.segments *
         descriptors_for(std::min(frame.longest_segment(), q_.options.max_frame));
}

bool UplinkTx::segment_fits(std::uint32_t len) const noexcept {
  if (len > q_.options.max_frame) return false;
  if (len <= q_.umem->tx_room()) return true;
  // Longer than one UMEM frame: made in the scratch buffer (multi-buffer
  // only) and sent as a chain the socket takes.
  const std::uint32_t n = descriptors_for(len);
  return len <= scratch_.size() && n <= q_.socket->tx_max_packet_descriptors() &&
         n <= UplinkQueue::kMaxChain;
}

std::uint32_t UplinkTx::capacity() const noexcept {
  return std::min(q_.options.tunables.tx_inflight_max, q_.socket->config().tx_size);
}

bool UplinkTx::admit(std::uint32_t descriptors) noexcept {
  if (descriptors > capacity()) {
    q_.port.counters().drop(
        DropReason::kOversize);  // more than the TX ring or tx_inflight_max, ever
    return false;
  }
  if (!has_room(descriptors)) {
    q_.port.counters().drop(DropReason::kUplinkTxFull);
    return false;
  }
  return true;
}

bool UplinkTx::can_accept(const Frame& frame) const noexcept {
  if (!q_.socket || !q_.link_up) return true;  // deliver() counts the drop
  const std::uint32_t n = frame_descriptors(frame);
  // One that never fits is taken (and dropped, counted): waiting for room
  // would hold its guest's transmit queue for good.
  return n > capacity() || has_room(n);
}

void UplinkTx::put(const std::uint64_t* addrs, const std::uint32_t* lens, std::uint32_t descriptors,
                   std::uint32_t len, std::uint32_t first_options) {
  std::uint32_t idx = 0;
  q_.socket->tx_reserve_packet(descriptors, idx);  // has_room() said there is room
  for (std::uint32_t i = 0; i < descriptors; ++i)
    q_.socket->tx_packet_desc(idx, i, descriptors, addrs[i], lens[i], first_options);
  reserved_ += descriptors;
  q_.port.counters().tx_packets.add();
  q_.port.counters().tx_bytes.add(len);
  // Keep the kernel busy within a long burst, too; always at a packet's end,
  // so that the kernel sees a chain whole.
  if (reserved_ >= q_.options.tunables.tx_burst) {
    q_.socket->tx_submit(reserved_);
    reserved_ = 0;
    kick();
  }
}

bool UplinkTx::put_copy(const net::ByteSpans& bytes) {
  // TX data starts tx_offset() into each frame (after the metadata room).
  const std::uint32_t room = q_.umem->tx_room();
  const std::uint32_t n = descriptors_for(bytes.len);
  if (n == 0 || n > q_.socket->tx_max_packet_descriptors() || n > UplinkQueue::kMaxChain)
    return false;
  // Only [0, n) is written and read: not value-initialized, which would zero
  // 768 bytes per frame (`rep stos`, two thirds of this function's time on
  // 64-byte frames).
  std::array<std::uint64_t, UplinkQueue::kMaxChain> addrs;
  std::array<std::uint32_t, UplinkQueue::kMaxChain> lens;
  for (std::uint32_t i = 0; i < n; ++i) {
    addrs[i] = q_.umem->frames().alloc() + q_.umem->tx_offset();
    lens[i] = std::min(room, bytes.len - i * room);
    net::gather(bytes, i * room, q_.umem->data(addrs[i]), lens[i]);
  }
  put(addrs.data(), lens.data(), n, bytes.len);
  return true;
}

void UplinkTx::deliver(const Frame& frame) {
  if (!q_.socket || !q_.link_up) {
    q_.port.counters().drop(DropReason::kUplinkDown);
    return;
  }
  if (frame.needs_offload()) {
    deliver_offloaded(frame);
    return;
  }
  if (frame.len > q_.options.max_frame) {
    q_.port.counters().drop(DropReason::kOversize);
    return;
  }
  if (!admit(descriptors_for(frame.len))) return;
  // One UMEM frame, or (multi-buffer) a chain of them.
  if (!put_copy(frame.bytes())) q_.port.counters().drop(DropReason::kOversize);
}

// A guest's GSO frame, or one with a checksum left to the "NIC": segmented
// (or copied whole) straight into UMEM frames, headers fixed on the way.
// Checksums: left to the kernel through TX metadata (ChecksumMode::partial)
// where the socket takes it and every segment fits one UMEM frame,
// finished in software otherwise. A segment longer than one UMEM frame
// (jumbo MTU) is made in a scratch buffer and copied out as a chain.
void UplinkTx::deliver_offloaded(const Frame& frame) {
  // All of the frame or none of it: the first segment is the longest, and
  // one this queue cannot send drops the frame before any segment leaves.
  if (!segment_fits(frame.longest_segment())) {
    q_.port.counters().drop(DropReason::kOversize);
    return;
  }
  const std::uint32_t descriptors = frame_descriptors(frame);
  if (!admit(descriptors)) return;
  const bool offload = checksum_offload_ && descriptors == frame.offload.segments;
  struct UmemSink {
    UplinkTx& port;
    std::uint32_t room;
    std::uint32_t max_frame;
    std::uint64_t addr = 0;  // the UMEM frame handed out, while `held`
    bool held = false;
    bool failed = false;
    std::uint32_t offloaded = 0;  // segments whose checksum the kernel finishes
    net::SegmentBuffer next_buffer(std::uint32_t len) noexcept {
      if (len > max_frame) return {};
      if (len > room) return {port.scratch_.data(), max_frame};
      addr = port.q_.umem->frames().alloc() + port.q_.umem->tx_offset();
      held = true;
      return {port.q_.umem->data(addr), room};
    }
    void commit(const net::SegmentBuffer& b, const net::SegmentMeta& meta) noexcept {
      if (b.data != port.scratch_.data()) {
        std::uint32_t options = 0;
        if (meta.csum_partial) {
          // Read by the kernel before the descriptor's data; plain stores,
          // published with the descriptor by tx_submit's store-release.
          xsk::TxMetadata md;
          md.flags = xsk::kTxMetadataChecksum;
          md.csum_start = meta.csum_start;
          md.csum_offset = meta.csum_offset;
          std::memcpy(b.data - xsk::kTxMetadataLen, &md, sizeof md);
          options = xsk::kTxMetadataOption;
          ++offloaded;
        }
        port.put(&addr, &meta.len, 1, meta.len, options);
        held = false;
        return;
      }
      const Span whole{b.data, meta.len};
      net::ByteSpans bytes;
      bytes.spans = &whole;
      bytes.count = 1;
      bytes.len = meta.len;
      if (!port.put_copy(bytes)) failed = true;
    }
  };
  // Segments longer than one UMEM frame are made in the scratch buffer and
  // sent as a chain; without multi-buffer there is none, and a segment must
  // fit one frame.
  const std::uint32_t room = q_.umem->tx_room();
  const std::uint32_t longest = std::min(
      q_.options.max_frame, scratch_.empty() ? room : static_cast<std::uint32_t>(scratch_.size()));
  UmemSink sink{*this, room, longest};
  const net::SegmentResult r =
      net::segment(frame.bytes(), frame.offload,
                   offload ? net::ChecksumMode::partial : net::ChecksumMode::software, sink);
  if (r.status != net::SegmentStatus::done || sink.failed) [[unlikely]] {
    // Not after segment_fits(): a segmenter that made a segment longer than
    // the first. Those before it are sent; the rest is dropped, counted.
    if (sink.held) q_.umem->frames().free(sink.addr);  // handed out, not committed
    q_.port.counters().drop(DropReason::kOversize);
    return;
  }
  if (frame.offload.is_gso()) q_.port.counters().gso_segments.add(r.segments);
  if (frame.offload.request.csum.needed || frame.offload.is_gso()) {
    q_.port.counters().csum_offloaded.add(sink.offloaded);
    q_.port.counters().csum_software.add(r.segments - sink.offloaded);
  }
}

void UplinkTx::kick() noexcept {
  // Kicking TX only when needed (docs/techniques.md): when the kernel needs it (need_wakeup, or
  // copy mode with descriptors pending: the kernel only sends inside sendto).
  if (!q_.socket->tx_kick_needed()) return;
  q_.counters.tx_kicks.add();
  switch (q_.socket->kick_tx()) {
    case xsk::WakeupResult::kOk:
      break;
    case xsk::WakeupResult::kBusy:
      // Copy mode: the device dropped the frame it was given (the kernel
      // completed it unsent) and stopped there; the rest go next round.
      if (!q_.socket->zero_copy()) q_.port.counters().drop(DropReason::kUplinkRefused);
      break;
    case xsk::WakeupResult::kAgain:
    case xsk::WakeupResult::kNoBuffers:
      q_.counters.tx_kicks_again.add();  // descriptors stay on the ring: kicked again next round
      break;
    case xsk::WakeupResult::kNetDown:
      q_.set_link_up(false);  // the link monitor reports it; frames now count as uplink_down
      break;
    case xsk::WakeupResult::kError:
      break;
  }
  q_.umem->reclaim_completions(q_.umem->config().comp_size);
}

void UplinkTx::end_burst() {
  if (!q_.socket) return;
  if (reserved_ != 0) {
    q_.socket->tx_submit(reserved_);
    reserved_ = 0;
  }
  kick();
}

}  // namespace xdpvhost::dataplane
