#include "dataplane/guest_port.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "dataplane/flow_hash.hpp"
#include "dataplane/forwarder.hpp"
#include "net/ethernet.hpp"
#include "net/gso_segmenter.hpp"
#include "sys/log_rate.hpp"
#include "sys/peer_io_watch.hpp"
#include "virtio/features.hpp"
#include "virtio/net_header.hpp"

namespace xdpvhost::dataplane {

using virtio::DescriptorChain;
using virtio::Feature;
using virtio::NetHeader;
using Direction = virtio::SplitQueue::Direction;

namespace {

// Adds one to a peer's eventfd (call or err). False if the write slept
// until it was interrupted (sys::PeerIoWatch): the frontend cleared the
// eventfd's O_NONBLOCK and filled its counter. A full counter on a
// non-blocking eventfd (EAGAIN) is the frontend's own loss of an interrupt.
bool signal_eventfd(const sys::UniqueFd& fd) noexcept {
  const std::uint64_t one = 1;
  const sys::PeerIoWatch::Call call;
  return !(::write(fd.get(), &one, sizeof one) < 0 && errno == EINTR);
}

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

GuestPort::GuestPort(std::uint32_t id, std::string name, std::uint32_t uplink, Options options,
                     MacLearner* learner)
    : Port(id, std::move(name), PortKind::kGuest, uplink),
      options_(options),
      tunables_(options.tunables),
      source_(options.mac_policy, options.mac, options.holds_mac, learner),
      max_frame_(net::max_frame_for_mtu(options.mtu)),
      // Room for kBacklogFrames frames of the MTU and kBacklogGsoFrames GSO
      // frames of 64 KiB (GRO's super-frames from the uplink: each one
      // dropped for want of room costs the guest's TCP 30-45 segments).
      // Allocated on first use.
      backlog_(kBacklogFrames, kBacklogFrames * std::max(net::max_frame_for_mtu(options.mtu),
                                                         net::max_frame_for_mtu(1500)) +
                                   kBacklogGsoFrames * net::kMaxGsoFrame) {
  tx_spans_.reserve(64);
  rx_vrings_.reserve(kMaxQueuePairs);  // no allocation when rings start and stop
  tx_vrings_.reserve(kMaxQueuePairs);
  running_vrings_.reserve(kMaxVrings);
  rx_chains_.resize(4);
  flood_.set_rate(tunables_.flood_rate, flood_bucket(tunables_.flood_rate));
}

bool GuestPort::broken() const noexcept {
  for (const auto& s : status_)
    if (s.state.load(std::memory_order_relaxed) == QueueState::kBroken) return true;
  return false;
}

// ---- commands ---------------------------------------------------------------

void GuestPort::start_queue(vhost::QueueStart&& start) {
  const std::uint32_t vring = start.vring;
  if (vring >= kMaxVrings) return;
  Queue& q = queues_[vring];
  if (q.running) stop_queue(vring);
  const std::uint64_t features = start.features;
  features_.store(features, std::memory_order_relaxed);
  header_size_ = static_cast<std::uint32_t>(virtio::net_header_size(features));
  mergeable_ = virtio::has(features, Feature::kNetMrgRxbuf);
  guest_csum_ = virtio::has(features, Feature::kNetGuestCsum);
  guest_offloads_ = net::GuestOffloads{guest_csum_, virtio::has(features, Feature::kNetGuestTso4),
                                       virtio::has(features, Feature::kNetGuestTso6),
                                       virtio::has(features, Feature::kNetGuestEcn),
                                       virtio::has(features, Feature::kNetGuestUso4) &&
                                           virtio::has(features, Feature::kNetGuestUso6)};
  host_tso4_ = virtio::has(features, Feature::kNetHostTso4);
  host_tso6_ = virtio::has(features, Feature::kNetHostTso6);
  host_uso_ = virtio::has(features, Feature::kNetHostUso);
  tx_policy_.ecn = virtio::has(features, Feature::kNetHostEcn);
  takes_gso_.store((guest_offloads_.tso4 ? 1u : 0u) | (guest_offloads_.tso6 ? 2u : 0u),
                   std::memory_order_relaxed);

  q.kick = std::move(start.kick);
  q.call = std::move(start.call);
  q.err = std::move(start.err);
  q.running = true;
  if (!is_tx(vring)) rx_restarting_ = false;
  q.error_reported = false;
  q.short_valid = false;
  status_[vring].error.store(virtio::QueueError::kNone, std::memory_order_relaxed);
  status_[vring].state.store(QueueState::kRunning, std::memory_order_relaxed);
  if (q.ring.attach(std::move(start.memory), start.ring) != virtio::QueueError::kNone) {
    report_broken(q, vring);
  } else {
    // We are polling now; guest notifications are re-enabled before we sleep
    // (TX, and RX while frames wait for its buffers: prepare_sleep).
    q.ring.disable_notifications();
  }
  refresh_queue_lists();
  wait_fds_changed();
}

void GuestPort::mac_learned(const net::MacAddress& mac) noexcept {
  source_.learned(mac);
  if (group() == id()) counters().mac_learned.add();  // once per port, not per queue group
}

void GuestPort::count_refused(Admission admission) noexcept {
  counters().drop(DropReason::kSpoofedSource);
  if (admission == Admission::kRefuseOwned) counters().refused(MacRefusal::kAnotherPort);
  if (admission == Admission::kRefuseRateLimited) counters().refused(MacRefusal::kRateLimited);
}

void GuestPort::mac_refused(const net::MacAddress& mac, MacRefusal why) noexcept {
  source_.refused(mac);
  if (group() == id()) counters().refused(why);  // once per port, not per queue group
}

void GuestPort::set_mtu(std::uint32_t mtu) noexcept {
  // The frontend may lower the MTU (NET_SET_MTU), never raise it above the
  // configured one: the uplink's frame room and the backlog are sized by it.
  max_frame_ = net::max_frame_for_mtu(std::min(mtu, options_.mtu));
}

void GuestPort::forget_backlog() {
  if (const std::uint32_t n = backlog_.clear(); n != 0)
    counters().drop(DropReason::kPortNotReady, n);
  held_.store(0, std::memory_order_relaxed);
  blocked_rx_ = nullptr;
  rx_restarting_ = false;
}

std::uint16_t GuestPort::stop_queue(std::uint32_t vring, vhost::RingStop why) {
  if (vring >= kMaxVrings) return 0;
  Queue& q = queues_[vring];
  if (!is_tx(vring)) {
    // A receive queue the guest disables (ethtool -L): frames held for the
    // guest wait for its other ones. None left: held frames wait for the
    // ring's restart (a new call or kick fd), and are lost when the guest
    // resets or goes.
    if (blocked_rx_ == &q) blocked_rx_ = nullptr;
    const bool other_rx = std::any_of(rx_vrings_.begin(), rx_vrings_.end(),
                                      [vring](std::uint32_t v) { return v != vring; });
    if (!other_rx && why == vhost::RingStop::kRestart) rx_restarting_ = true;
    if (!other_rx && why == vhost::RingStop::kForGood) forget_backlog();
  }
  if (!q.running) return q.ring.last_avail_idx();
  flush(q);  // batched signals (docs/techniques.md): nothing pending across a stop
  const std::uint16_t base = q.ring.last_avail_idx();
  q.ring.detach();
  q.kick.reset();
  q.call.reset();
  q.err.reset();
  q.running = false;
  status_[vring].state.store(QueueState::kStopped, std::memory_order_relaxed);
  status_[vring].error.store(virtio::QueueError::kNone, std::memory_order_relaxed);
  refresh_queue_lists();
  wait_fds_changed();
  return base;
}

void GuestPort::refresh_queue_lists() {
  rx_vrings_.clear();
  tx_vrings_.clear();
  running_vrings_.clear();
  for (std::uint32_t v = 0; v < kMaxVrings; ++v) {
    if (!queues_[v].running) continue;
    running_vrings_.push_back(v);
    (is_tx(v) ? tx_vrings_ : rx_vrings_).push_back(v);
  }
}

void GuestPort::report_broken(Queue& q, std::uint32_t vring) {
  if (q.error_reported) return;
  q.error_reported = true;
  const auto error = q.ring.error();
  status_[vring].error.store(error, std::memory_order_relaxed);
  status_[vring].state.store(QueueState::kBroken, std::memory_order_relaxed);
  counters().queue_errors.add();
  // Once per break; a guest that breaks its rings in a loop is rate-limited.
  if (sys::worth_logging(counters().queue_errors.get()))
    spdlog::warn(
        "port {}: vring {} broken ({}); it stays stopped until the guest resets the "
        "device (queue error #{})",
        name(), vring, virtio::to_string(error), counters().queue_errors.get());
  if (q.err.valid()) (void)signal_eventfd(q.err);  // blocked: it is broken already
  wait_fds_changed();
}

void GuestPort::eventfd_blocked(Queue& q) {
  q.ring.refuse(virtio::QueueError::kEventfdBlocks);
  report_broken(q, static_cast<std::uint32_t>(&q - queues_.data()));
}

void GuestPort::peer_fd_blocked(int fd) {
  for (auto& q : queues_)
    if (q.kick.valid() && q.kick.get() == fd) eventfd_blocked(q);
}

// ---- guest TX -----------------------------------------------------------------

unsigned GuestPort::poll(Forwarder& forwarder) {
  // Held frames are tried again only when the guest may have posted buffers
  // (the receive queue's avail index moved), not every round: a guest that
  // posts too little for them would otherwise cost a ring walk per round.
  unsigned total = 0;
  if (announce_pending_) [[unlikely]]
    send_announce(forwarder);
  if (!backlog_.empty() && (blocked_rx_ == nullptr || !blocked_rx_->ring.attached() ||
                            blocked_rx_->ring.driver_avail_idx() != blocked_avail_))
    total = drain_backlog();
  for (const std::uint32_t v : tx_vrings_) {
    Queue& q = queues_[v];
    if (q.ring.usable()) total += poll_tx(q, v, forwarder);
  }
  return total;
}

unsigned GuestPort::poll_tx(Queue& q, std::uint32_t vring, Forwarder& forwarder) {
  // Bounded cost per round: tx_burst packets (a GSO frame counts its
  // segments: the packets it becomes on the wire or for a guest without
  // GSO), and at most kDescriptorsPerRound descriptors walked, so a guest of
  // long chains or many-segment frames cannot hold up the others on this
  // thread. The first frame of a round always goes, whatever its segments.
  unsigned n = 0;
  std::uint32_t walked = 0;
  while (n < tunables_.tx_burst && walked < kDescriptorsPerRound) {
    // A chain longer than the longest frame the guest may send is not walked
    // further: 64 KiB + headers with segmentation offload, else its MTU.
    const std::uint32_t longest =
        (host_tso4_ || host_tso6_ || host_uso_) ? net::kMaxGsoFrame : max_frame_;
    if (!q.ring.pop(tx_chain_, Direction::kDeviceReads, header_size_ + longest)) {
      if (q.ring.broken()) report_broken(q, vring);
      break;
    }
    walked += tx_chain_.descriptors;
    if (tx_chain_.truncated && longest == net::kMaxGsoFrame) [[unlikely]] {
      // Longer than a 64 KiB IP packet with its headers: no frame at all, and
      // no guest driver builds such chains; one that does would be walked up
      // to the limit every round while it refills its ring. Its queue breaks.
      // (A chain just over the MTU of a port without segmentation offload is
      // only dropped, below: a guest whose MTU is set higher than the port's.)
      counters().drop(DropReason::kOversize);
      q.ring.refuse(virtio::QueueError::kBeyondAnyFrame);
      report_broken(q, vring);
      break;
    }
    Frame frame;
    net::OffloadError refused = net::OffloadError::none;
    // A truncated chain is longer than any frame the guest may send.
    const bool parsed = !tx_chain_.truncated && frame_from_chain(tx_chain_, frame, refused);
    if (!parsed && !tx_chain_.truncated) {
      if (refused != net::OffloadError::none) {
        counters().drop(DropReason::kBadOffload);
        counters().refused(refused);
      } else {
        counters().drop(DropReason::kMalformed);
      }
    } else if (tx_chain_.truncated || (!frame.offload.is_gso() && frame.len > max_frame_)) {
      counters().drop(DropReason::kOversize);
    } else if (const Admission admission = source_.admit(frame.src(), forwarder.table(), this);
               admission != Admission::kAdmit) {
      if (admission == Admission::kHold) {
        // The control side decides on its source: the chain waits on the
        // ring, this queue until the answer (a command, which wakes us).
        q.ring.unpop(1);
        break;
      }
      count_refused(admission);
    } else if (frame.is_multicast() && !flood_.allow(frame.offload.segments)) {
      counters().drop(DropReason::kFloodLimited);
    } else {
      if (!forwarder.forward(*this, frame)) {
        // Destination full: the chain stays on the ring (back-pressure to
        // the guest) and is taken again next round.
        q.ring.unpop(1);
        break;
      }
      counters().rx_packets.add();
      counters().rx_bytes.add(frame.len);
      pair_counters_[vring / 2].rx_packets.add();
      if (frame.offload.is_gso()) counters().gso_rx.add();
      n += frame.offload.segments - 1;  // the chain's 1 is added below
    }
    q.ring.add_used(tx_chain_.head, 0);
    if (q.ring.staged_used() >= tunables_.signal_batch) flush(q);
    ++n;
  }
  return n;
}

void GuestPort::send_announce(Forwarder& forwarder) {
  announce_pending_ = false;
  // RARP "request reverse" from the guest's MAC, as QEMU announces a guest
  // itself (net/announce.c): broadcast, sender and target hardware address
  // the MAC, no protocol addresses, padded to the 60-byte minimum.
  std::uint8_t rarp[60] = {};
  std::memset(rarp, 0xff, 6);
  std::memcpy(rarp + 6, announce_mac_.data(), 6);
  const std::uint8_t fixed[] = {0x80, 0x35,               // ethertype RARP
                                0x00, 0x01, 0x08, 0x00,   // hardware Ethernet, protocol IPv4
                                6,    4,    0x00, 0x03};  // lengths, op 3 (reverse request)
  std::memcpy(rarp + 12, fixed, sizeof fixed);
  std::memcpy(rarp + 22, announce_mac_.data(), 6);
  std::memcpy(rarp + 32, announce_mac_.data(), 6);
  const Span span{rarp, sizeof rarp};  // outlives the frame, which points to it
  const Frame frame(span);
  if (const Admission admission = source_.admit(frame.src(), forwarder.table(), this);
      admission != Admission::kAdmit) {
    if (admission == Admission::kHold) {
      announce_pending_ = true;  // sent once its source is decided on
      return;
    }
    count_refused(admission);
    return;
  }
  if (!flood_.allow()) {  // a broadcast like any the guest sends
    counters().drop(DropReason::kFloodLimited);
    return;
  }
  forwarder.forward(*this, frame);
  counters().rx_packets.add();
  counters().rx_bytes.add(frame.len);
}

bool GuestPort::frame_from_chain(const DescriptorChain& chain, Frame& frame,
                                 net::OffloadError& refused) {
  if (chain.readable_bytes < header_size_ + net::kEthernetHeader) return false;
  // The header may be split over descriptors (ANY_LAYOUT): gather it.
  tx_spans_.clear();
  for (const virtio::HostSpan& s : chain.readable) tx_spans_.push_back(Span{s.data, s.len});
  Frame whole;
  whole.spans = tx_spans_.data();
  whole.span_count = static_cast<std::uint32_t>(tx_spans_.size());
  whole.len = chain.readable_bytes;
  NetHeader header{};
  gather(whole, 0, reinterpret_cast<std::uint8_t*>(&header), header_size_);

  // The frame: the spans past the header.
  std::uint32_t skip = header_size_;
  std::size_t out = 0;
  for (std::size_t i = 0; i < tx_spans_.size(); ++i) {
    const Span& s = tx_spans_[i];
    if (skip >= s.len) {
      skip -= s.len;
      continue;
    }
    tx_spans_[out++] = Span{s.data + skip, s.len - skip};
    skip = 0;
  }
  tx_spans_.resize(out);
  frame.spans = tx_spans_.data();
  frame.span_count = static_cast<std::uint32_t>(tx_spans_.size());
  frame.len = chain.readable_bytes - header_size_;
  if (!load_ethernet_header(frame)) return false;

  // What the header asks for, checked against the frame before anything
  // trusts it (gso_size, hdr_len, csum_start/offset, the real headers).
  net::OffloadRequest request;
  const net::VirtioNetOffload fields{header.flags,    header.gso_type,   header.hdr_len,
                                     header.gso_size, header.csum_start, header.csum_offset};
  if (const auto e = net::decode_virtio_offload(fields, request); e != net::OffloadError::none) {
    refused = e;
    return false;
  }
  const net::GsoType gso = request.gso.type;
  if ((gso == net::GsoType::tcpv4 && !host_tso4_) || (gso == net::GsoType::tcpv6 && !host_tso6_) ||
      (gso == net::GsoType::udp_l4 && !host_uso_)) {
    refused = net::OffloadError::gso_bad_type;  // a GSO type the guest did not negotiate
    return false;
  }
  if (!request.any()) return true;
  tx_policy_.mtu = max_frame_ - net::kL2Overhead;
  const net::OffloadCheck check = net::validate_offload(frame.bytes(), request, tx_policy_);
  if (!check.ok()) {
    refused = check.error;
    return false;
  }
  frame.offload = check.offload;
  return true;
}

// ---- guest RX -----------------------------------------------------------------

GuestPort::Queue* GuestPort::pick_rx_queue(const Frame& frame) noexcept {
  if (rx_vrings_.empty()) return nullptr;
  const std::uint32_t v = rx_vrings_.size() == 1
                              ? rx_vrings_[0]
                              : rx_vrings_[queue_for_flow(flow_hash(frame), rx_vrings_.size())];
  return &queues_[v];
}

void GuestPort::deliver(const Frame& frame) {
  // Order is kept: while frames are held, new ones queue behind them.
  if (backlog_.empty() && try_deliver(frame) == Delivery::kDone) return;
  if (!backlog_.push(frame)) {
    counters().drop(DropReason::kNoRxBuffer);
    return;
  }
  held_.store(backlog_.size(), std::memory_order_relaxed);
}

unsigned GuestPort::drain_backlog() {
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

GuestPort::Delivery GuestPort::try_deliver(const Frame& frame) {
  Queue* q = pick_rx_queue(frame);
  if (q == nullptr) {
    if (rx_restarting_) return Delivery::kNoBuffer;  // held until the ring is back
    counters().drop(DropReason::kPortNotReady);
    return Delivery::kDone;
  }
  if (!q->ring.usable()) {
    counters().drop(DropReason::kQueueBroken);
    return Delivery::kDone;
  }
  if (!frame.needs_offload()) {
    if (frame.len > max_frame_) {
      counters().drop(DropReason::kOversize);
      return Delivery::kDone;
    }
    net::VirtioNetOffload plain;
    if (frame.data_valid && guest_csum_) plain.flags = net::kVirtioNetDataValid;
    return write_to_guest(*q, frame, plain, frame.len, nullptr);
  }
  // Segmentation or a checksum: passed on as it is where the guest takes it
  // (GUEST_TSO4/6, GUEST_CSUM), else done here.
  const net::GuestForward plan =
      net::plan_guest_forward(frame.bytes(), frame.offload, guest_offloads_);
  if (plan.segment) return deliver_segments(*q, frame);
  // What reaches the guest as one plain frame (a GSO frame of one segment
  // too) must fit its MTU; GSO frames reach it as GSO.
  if (plan.header.gso_type == net::kVirtioGsoNone && plan.frame_len > max_frame_) {
    counters().drop(DropReason::kOversize);
    return Delivery::kDone;
  }
  const Delivery d =
      write_to_guest(*q, frame, plan.header, plan.frame_len, plan.patch ? &plan : nullptr);
  if (d == Delivery::kDone && frame.offload.is_gso()) counters().gso_tx.add();
  return d;
}

GuestPort::Delivery GuestPort::deliver_segments(Queue& q, const Frame& frame) {
  // All of the frame or none of it, as far as can be known beforehand: its
  // segments fit the guest's MTU (the first is the longest), and the ring
  // holds a chain for each; without them the whole frame waits.
  if (frame.offload.is_gso() && frame.longest_segment() > max_frame_) {
    counters().drop(DropReason::kOversize);
    return Delivery::kDone;
  }
  const std::uint32_t total = frame.offload.segments;
  if (total > q.ring.size()) {
    // More segments than the guest's ring holds: waiting for them would hold
    // every later frame for this guest, forever.
    counters().drop(DropReason::kRxBufferTooSmall);
    return Delivery::kDone;
  }
  if (q.ring.available(static_cast<std::uint16_t>(std::min<std::uint32_t>(total, 0xffff))) <
      total) {
    return out_of_buffers(q);
  }
  if (segment_buffer_.size() < net::kMaxGsoFrame) segment_buffer_.resize(net::kMaxGsoFrame);
  // Each segment is made in segment_buffer_ and written to the guest as a
  // frame of its own, every checksum complete: DATA_VALID for a guest that
  // reads the flag. A segment that needs more buffers than the guest left
  // (small ones, MRG_RXBUF) is dropped, counted.
  struct GuestSink {
    GuestPort& port;
    Queue& q;
    net::VirtioNetOffload header;
    net::SegmentBuffer next_buffer(std::uint32_t len) noexcept {
      if (len > port.max_frame_) return {};  // a frame without GSO longer than the MTU
      return {port.segment_buffer_.data(), static_cast<std::uint32_t>(port.segment_buffer_.size())};
    }
    void commit(const net::SegmentBuffer& b, const net::SegmentMeta& meta) noexcept {
      const Span span{b.data, meta.len};
      if (port.write_to_guest(q, Frame(span), header, meta.len, nullptr) == Delivery::kNoBuffer)
        port.counters().drop(DropReason::kNoRxBuffer);
    }
  };
  GuestSink sink{*this, q, {}};
  if (guest_csum_) sink.header.flags = net::kVirtioNetDataValid;
  const net::SegmentResult r =
      net::segment(frame.bytes(), frame.offload, net::ChecksumMode::software, sink);
  if (r.status != net::SegmentStatus::done) {
    counters().drop(DropReason::kOversize);
    return Delivery::kDone;
  }
  if (frame.offload.is_gso()) counters().gso_segments.add(r.segments);
  if (frame.offload.request.csum.needed) counters().csum_software.add();
  return Delivery::kDone;
}

GuestPort::Delivery GuestPort::out_of_buffers(Queue& q) {
  if (q.ring.broken()) {  // a malformed avail ring, not a short one
    report_broken(q, static_cast<std::uint32_t>(&q - queues_.data()));
    counters().drop(DropReason::kQueueBroken);
    return Delivery::kDone;
  }
  // The frame waits until the guest posts more (its avail index moves).
  blocked_rx_ = &q;
  blocked_avail_ = q.ring.driver_avail_idx();
  return Delivery::kNoBuffer;
}

GuestPort::Delivery GuestPort::write_to_guest(Queue& q, const Frame& frame,
                                              const net::VirtioNetOffload& offload,
                                              std::uint32_t len, const net::GuestForward* patch) {
  const std::uint32_t need = header_size_ + len;
  if (q.short_valid && need > q.short_room && q.ring.last_avail_idx() == q.short_last &&
      q.ring.driver_avail_idx() == q.short_avail) {
    counters().drop(DropReason::kRxBufferTooSmall);  // the same buffers as last time
    return Delivery::kDone;
  }
  unsigned n = 0;
  std::uint32_t room = 0;
  std::uint32_t walked = 0;
  while (room < need) {
    if (n == kMaxBuffersPerFrame) break;  // buffers this small: counted as too small below
    if (n == rx_chains_.size()) rx_chains_.emplace_back();
    if (!q.ring.pop(rx_chains_[n], Direction::kDeviceWrites, 0xffffffffu,
                    kRxDescriptorsPerFrame - walked)) {
      q.ring.unpop(static_cast<std::uint16_t>(n));
      return out_of_buffers(q);
    }
    const virtio::DescriptorChain& chain = rx_chains_[n++];
    walked += chain.descriptors;
    if (chain.truncated) break;  // the rest of this chain is beyond the budget
    room += chain.writable_bytes;
    if (!mergeable_ || walked >= kRxDescriptorsPerFrame) break;
  }
  if (room < need) {  // also when the budget ran out before the room did
    q.ring.unpop(static_cast<std::uint16_t>(n));
    q.short_valid = true;
    q.short_room = room;
    q.short_last = q.ring.last_avail_idx();
    q.short_avail = q.ring.driver_avail_idx();
    counters().drop(DropReason::kRxBufferTooSmall);
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
  ChainWriter out(rx_chains_, n);
  out.write(&header, header_size_);
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
    ChainWriter at(rx_chains_, n);
    at.write(nullptr, header_size_ + patch->patch_offset);
    at.write(be, sizeof be);
  }
  // Live migration: the pages just written are dirty, marked before the
  // used entries that hand them to the guest (those are marked at publish).
  if (q.ring.logging()) [[unlikely]] {
    if (!log_rx(q, n, need)) {
      // The chains go back to the avail ring, not used and not lost: the
      // index GET_VRING_BASE reports must not count them.
      q.ring.unpop(static_cast<std::uint16_t>(n));
      report_broken(q, static_cast<std::uint32_t>(&q - queues_.data()));
      counters().drop(DropReason::kQueueBroken);
      return Delivery::kDone;
    }
  }
  std::uint32_t remaining = need;
  for (unsigned i = 0; i < n; ++i) {
    const std::uint32_t used = std::min(remaining, rx_chains_[i].writable_bytes);
    q.ring.add_used(rx_chains_[i].head, used);
    remaining -= used;
  }
  counters().tx_packets.add();
  counters().tx_bytes.add(len);
  pair_counters_[static_cast<std::size_t>(&q - queues_.data()) / 2].tx_packets.add();
  if (q.ring.staged_used() >= tunables_.signal_batch) flush(q);
  return Delivery::kDone;
}

bool GuestPort::log_rx(Queue& q, unsigned n, std::uint32_t bytes) noexcept {
  for (unsigned i = 0; i < n && bytes > 0; ++i) {
    const std::uint32_t used = std::min(bytes, rx_chains_[i].writable_bytes);
    if (!q.ring.log_writes(rx_chains_[i], used)) return false;
    bytes -= used;
  }
  return true;
}

// ---- bursts, signals, sleeping ---------------------------------------------------

void GuestPort::flush(Queue& q) noexcept {
  if (q.ring.staged_used() == 0) return;
  q.ring.publish_used();
  if (q.ring.should_signal()) {
    if (q.call.valid()) {
      if (!signal_eventfd(q.call)) [[unlikely]] {
        eventfd_blocked(q);
        return;
      }
      counters().interrupts.add();
    }
  } else {
    counters().interrupts_suppressed.add();
  }
}

void GuestPort::end_burst() {
  for (const std::uint32_t v : running_vrings_) flush(queues_[v]);
}

bool GuestPort::prepare_sleep() {
  bool work = false;
  // Kicks are wanted on the TX queues, and on the RX queues while frames
  // wait for receive buffers (the guest's refill must wake us).
  // While a source is decided on, its frame waits on a transmit queue: the
  // answer (a command) wakes the thread, not the ring.
  const bool holding = source_.pending();
  for (const std::uint32_t v : backlog_.empty() ? tx_vrings_ : running_vrings_) {
    Queue& q = queues_[v];
    if (holding && is_tx(v)) continue;
    if (q.ring.usable()) work = q.ring.enable_notifications() || work;
  }
  return work;
}

void GuestPort::after_wake() {
  for (const std::uint32_t v : running_vrings_) {
    Queue& q = queues_[v];
    if (q.ring.usable()) q.ring.disable_notifications();
  }
}

void GuestPort::wait_fds(std::vector<WaitFd>& out, bool& needs_timer) {
  for (const std::uint32_t v : running_vrings_) {
    Queue& q = queues_[v];
    if (!q.ring.usable()) continue;
    if (q.kick.valid())
      out.push_back(WaitFd{q.kick.get(), EPOLLIN, true, this});
    else if (is_tx(v))
      needs_timer = true;  // no kick fd: this ring can only be polled
  }
}

}  // namespace xdpvhost::dataplane
