#include "dataplane/guest_rx.hpp"

#include <algorithm>
#include <cstring>

#include "dataplane/flow_hash.hpp"
#include "net/ethernet.hpp"
#include "net/gso_segmenter.hpp"
#include "virtio/net_header.hpp"

namespace xdpvhost::dataplane {

using virtio::DescriptorChain;
using virtio::NetHeader;
using Direction = virtio::SplitQueue::Direction;

namespace {

// Sequential writer over the writable spans of several chains.
class ChainWriter {
 public:
  ChainWriter(const std::vector<DescriptorChain>& chains, unsigned count)
      : chains_(chains), count_(count) {}

  // Writes `len` bytes (or skips them if src is null); false if out of room.
  bool write(const void* src, std::uint32_t len) noexcept {
    auto* in = static_cast<const std::uint8_t*>(src);
    while (len > 0) {
      if (chain_ == count_) return false;
      const auto& spans = chains_[chain_].writable;
      if (span_ == spans.size()) {
        ++chain_;
        span_ = 0;
        offset_ = 0;
        continue;
      }
      const virtio::HostSpan& s = spans[span_];
      std::uint32_t take = std::min(s.len - offset_, len);
      if (in != nullptr) {
        std::memcpy(s.data + offset_, in, take);
        in += take;
      }
      offset_ += take;
      len -= take;
      if (offset_ == s.len) {
        ++span_;
        offset_ = 0;
      }
    }
    return true;
  }

 private:
  const std::vector<DescriptorChain>& chains_;
  unsigned count_;
  unsigned chain_ = 0;
  std::size_t span_ = 0;
  std::uint32_t offset_ = 0;
};

}  // namespace

GuestRx::GuestRx(GuestRings& rings, PortCounters& counters, const PortTunables& tunables,
                 std::uint32_t mtu)
    : rings_(rings),
      counters_(counters),
      tunables_(tunables),
      // Room for kBacklogFrames frames of the MTU and kBacklogGsoFrames GSO
      // frames of 64 KiB (GRO's super-frames from the uplink: each one
      // dropped for want of room costs the guest's TCP 30-45 segments).
      backlog_(kBacklogFrames, kBacklogFrames * std::max(net::max_frame_for_mtu(mtu),
                                                         net::max_frame_for_mtu(1500)) +
                                   kBacklogGsoFrames * net::kMaxGsoFrame),
      segment_buffer_(std::make_unique_for_overwrite<std::uint8_t[]>(net::kMaxGsoFrame)) {
  chains_.resize(4);
}

void GuestRx::ring_stopping(std::uint32_t vring, vhost::RingStop why) {
  // A receive queue the guest disables (ethtool -L): frames held for the
  // guest wait for its other ones. None left: held frames wait for the
  // ring's restart (a new call or kick fd), and are lost when the guest
  // resets or goes.
  GuestQueue& q = rings_.queue(vring);
  if (blocked_ == &q) blocked_ = nullptr;
  const std::vector<std::uint32_t>& rx = rings_.rx_vrings();
  const bool other_rx =
      std::any_of(rx.begin(), rx.end(), [vring](std::uint32_t v) { return v != vring; });
  if (!other_rx && why == vhost::RingStop::kRestart) restarting_ = true;
  if (!other_rx && why == vhost::RingStop::kForGood) forget_backlog();
}

void GuestRx::forget_backlog() {
  if (const std::uint32_t n = backlog_.clear(); n != 0)
    counters_.drop(DropReason::kPortNotReady, n);
  held_.store(0, std::memory_order_relaxed);
  blocked_ = nullptr;
  restarting_ = false;
}

unsigned GuestRx::drain_if_refilled() {
  if (backlog_.empty()) return 0;
  if (blocked_ != nullptr && blocked_->ring.attached() &&
      blocked_->ring.driver_avail_idx() == blocked_avail_)
    return 0;
  return drain_backlog();
}

GuestQueue* GuestRx::pick_queue(const Frame& frame) noexcept {
  const std::vector<std::uint32_t>& rx = rings_.rx_vrings();
  if (rx.empty()) return nullptr;
  const std::uint32_t v = rx.size() == 1 ? rx[0] : rx[queue_for_flow(flow_hash(frame), rx.size())];
  return &rings_.queue(v);
}

void GuestRx::deliver(const Frame& frame) {
  // Order is kept: while frames are held, new ones queue behind them.
  if (backlog_.empty() && try_deliver(frame) == Delivery::kDone) return;
  if (!backlog_.push(frame)) {
    counters_.drop(DropReason::kNoRxBuffer);
    return;
  }
  held_.store(backlog_.size(), std::memory_order_relaxed);
}

unsigned GuestRx::drain_backlog() {
  unsigned n = 0;
  while (!backlog_.empty()) {
    Span span;
    if (try_deliver(backlog_.front(span)) == Delivery::kNoBuffer) break;
    backlog_.pop();
    ++n;
  }
  held_.store(backlog_.size(), std::memory_order_relaxed);
  return n;
}

GuestRx::Delivery GuestRx::try_deliver(const Frame& frame) {
  const GuestLink& link = rings_.link();
  GuestQueue* q = pick_queue(frame);
  if (q == nullptr) {
    if (restarting_) return Delivery::kNoBuffer;  // held until the ring is back
    counters_.drop(DropReason::kPortNotReady);
    return Delivery::kDone;
  }
  if (!q->ring.usable()) {
    counters_.drop(DropReason::kQueueBroken);
    return Delivery::kDone;
  }
  if (!frame.needs_offload()) {
    if (frame.len > link.max_frame) {
      counters_.drop(DropReason::kOversize);
      return Delivery::kDone;
    }
    net::VirtioNetOffload plain;
    if (frame.data_valid && link.guest_csum) plain.flags = net::kVirtioNetDataValid;
    return write_to_guest(*q, frame, plain, frame.len, nullptr);
  }
  // Segmentation or a checksum: passed on as it is where the guest takes it
  // (GUEST_TSO4/6, GUEST_CSUM), else done here.
  const net::GuestForward plan =
      net::plan_guest_forward(frame.bytes(), frame.offload, link.guest_offloads);
  if (plan.segment) return deliver_segments(*q, frame);
  // What reaches the guest as one plain frame (a GSO frame of one segment
  // too) must fit its MTU; GSO frames reach it as GSO.
  if (plan.header.gso_type == net::kVirtioGsoNone && plan.frame_len > link.max_frame) {
    counters_.drop(DropReason::kOversize);
    return Delivery::kDone;
  }
  const Delivery d =
      write_to_guest(*q, frame, plan.header, plan.frame_len, plan.patch ? &plan : nullptr);
  if (d == Delivery::kDone && frame.offload.is_gso()) counters_.gso_tx.add();
  return d;
}

GuestRx::Delivery GuestRx::deliver_segments(GuestQueue& q, const Frame& frame) {
  const GuestLink& link = rings_.link();
  // All of the frame or none of it, as far as can be known beforehand: its
  // segments fit the guest's MTU (the first is the longest), and the ring
  // holds a chain for each; without them the whole frame waits.
  if (frame.offload.is_gso() && frame.longest_segment() > link.max_frame) {
    counters_.drop(DropReason::kOversize);
    return Delivery::kDone;
  }
  const std::uint32_t total = frame.offload.segments;
  if (total > q.ring.size()) {
    // More segments than the guest's ring holds: waiting for them would hold
    // every later frame for this guest, forever.
    counters_.drop(DropReason::kRxBufferTooSmall);
    return Delivery::kDone;
  }
  if (q.ring.available(static_cast<std::uint16_t>(std::min<std::uint32_t>(total, 0xffff))) <
      total) {
    return out_of_buffers(q);
  }
  // Each segment is made in segment_buffer_ and written to the guest as a
  // frame of its own, every checksum complete: DATA_VALID for a guest that
  // reads the flag. A segment that needs more buffers than the guest left
  // (small ones, MRG_RXBUF) is dropped, counted.
  struct GuestSink {
    GuestRx& port;
    GuestQueue& q;
    net::VirtioNetOffload header;
    net::SegmentBuffer next_buffer(std::uint32_t len) noexcept {
      if (len > port.rings_.link().max_frame) return {};  // a frame without GSO longer than the MTU
      return {port.segment_buffer_.get(), net::kMaxGsoFrame};
    }
    void commit(const net::SegmentBuffer& b, const net::SegmentMeta& meta) noexcept {
      const Span span{b.data, meta.len};
      if (port.write_to_guest(q, Frame(span), header, meta.len, nullptr) == Delivery::kNoBuffer)
        port.counters_.drop(DropReason::kNoRxBuffer);
    }
  };
  GuestSink sink{*this, q, {}};
  if (link.guest_csum) sink.header.flags = net::kVirtioNetDataValid;
  const net::SegmentResult r =
      net::segment(frame.bytes(), frame.offload, net::ChecksumMode::software, sink);
  if (r.status != net::SegmentStatus::done) {
    counters_.drop(DropReason::kOversize);
    return Delivery::kDone;
  }
  if (frame.offload.is_gso()) counters_.gso_segments.add(r.segments);
  if (frame.offload.request.csum.needed) counters_.csum_software.add();
  return Delivery::kDone;
}

GuestRx::Delivery GuestRx::out_of_buffers(GuestQueue& q) {
  if (q.ring.broken()) {  // a malformed avail ring, not a short one
    rings_.report_broken(q);
    counters_.drop(DropReason::kQueueBroken);
    return Delivery::kDone;
  }
  // The frame waits until the guest posts more (its avail index moves).
  blocked_ = &q;
  blocked_avail_ = q.ring.driver_avail_idx();
  return Delivery::kNoBuffer;
}

GuestRx::Delivery GuestRx::write_to_guest(GuestQueue& q, const Frame& frame,
                                          const net::VirtioNetOffload& offload, std::uint32_t len,
                                          const net::GuestForward* patch) {
  const GuestLink& link = rings_.link();
  const std::uint32_t need = link.header_size + len;
  if (q.short_valid && need > q.short_room && q.ring.last_avail_idx() == q.short_last &&
      q.ring.driver_avail_idx() == q.short_avail) {
    counters_.drop(DropReason::kRxBufferTooSmall);  // the same buffers as last time
    return Delivery::kDone;
  }
  unsigned n = 0;
  std::uint32_t room = 0;
  std::uint32_t walked = 0;
  while (room < need) {
    if (n == kMaxBuffersPerFrame) break;  // buffers this small: counted as too small below
    if (n == chains_.size()) chains_.emplace_back();
    if (!q.ring.pop(chains_[n], Direction::kDeviceWrites, 0xffffffffu,
                    kRxDescriptorsPerFrame - walked)) {
      q.ring.unpop(static_cast<std::uint16_t>(n));
      return out_of_buffers(q);
    }
    const virtio::DescriptorChain& chain = chains_[n++];
    walked += chain.descriptors;
    if (chain.truncated) break;  // the rest of this chain is beyond the budget
    room += chain.writable_bytes;
    if (!link.mergeable || walked >= kRxDescriptorsPerFrame) break;
  }
  if (room < need) {  // also when the budget ran out before the room did
    q.ring.unpop(static_cast<std::uint16_t>(n));
    q.short_valid = true;
    q.short_room = room;
    q.short_last = q.ring.last_avail_idx();
    q.short_avail = q.ring.driver_avail_idx();
    counters_.drop(DropReason::kRxBufferTooSmall);
    return Delivery::kDone;
  }
  q.short_valid = false;

  NetHeader header{};
  header.flags = offload.flags;
  header.gso_type = offload.gso_type;
  header.hdr_len = offload.hdr_len;
  header.gso_size = offload.gso_size;
  header.csum_start = offload.csum_start;
  header.csum_offset = offload.csum_offset;
  header.num_buffers = static_cast<std::uint16_t>(n);
  ChainWriter out(chains_, n);
  out.write(&header, link.header_size);
  std::uint32_t left = len;
  for (std::uint32_t i = 0; i < frame.span_count && left > 0; ++i) {
    const std::uint32_t take = std::min(left, frame.spans[i].len);
    out.write(frame.spans[i].data, take);
    left -= take;
  }
  if (patch != nullptr) {
    // The pseudo-header sum a GSO frame sent without NEEDS_CSUM lacks.
    const std::uint8_t be[2] = {static_cast<std::uint8_t>(patch->patch_value >> 8),
                                static_cast<std::uint8_t>(patch->patch_value)};
    ChainWriter at(chains_, n);
    at.write(nullptr, link.header_size + patch->patch_offset);
    at.write(be, sizeof be);
  }
  // Live migration: the pages just written are dirty, marked before the
  // used entries that hand them to the guest (those are marked at publish).
  if (q.ring.logging()) [[unlikely]] {
    if (!log_rx(q, n, need)) {
      // The chains go back to the avail ring, not used and not lost: the
      // index GET_VRING_BASE reports must not count them.
      q.ring.unpop(static_cast<std::uint16_t>(n));
      rings_.report_broken(q);
      counters_.drop(DropReason::kQueueBroken);
      return Delivery::kDone;
    }
  }
  std::uint32_t remaining = need;
  for (unsigned i = 0; i < n; ++i) {
    const std::uint32_t used = std::min(remaining, chains_[i].writable_bytes);
    q.ring.add_used(chains_[i].head, used);
    remaining -= used;
  }
  counters_.tx_packets.add();
  counters_.tx_bytes.add(len);
  rings_.pair(rings_.vring_of(q)).tx_packets.add();
  if (q.ring.staged_used() >= tunables_.signal_batch) rings_.flush(q);
  return Delivery::kDone;
}

bool GuestRx::log_rx(GuestQueue& q, unsigned n, std::uint32_t bytes) noexcept {
  for (unsigned i = 0; i < n && bytes > 0; ++i) {
    const std::uint32_t used = std::min(bytes, chains_[i].writable_bytes);
    if (!q.ring.log_writes(chains_[i], used)) return false;
    bytes -= used;
  }
  return true;
}

}  // namespace xdpvhost::dataplane
