#include "dataplane/guest_port.hpp"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>

#include <spdlog/spdlog.h>

#include "dataplane/checksum.hpp"
#include "dataplane/forwarder.hpp"
#include "net/ethernet.hpp"
#include "sys/log_rate.hpp"
#include "virtio/features.hpp"
#include "virtio/net_header.hpp"

namespace xdpvhost::dataplane {

using virtio::DescriptorChain;
using virtio::Feature;
using virtio::NetHeader;
using Direction = virtio::SplitQueue::Direction;

namespace {

void signal_eventfd(const sys::UniqueFd& fd) noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(fd.get(), &one, sizeof one);
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
      const Span& s = spans[span_];
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

std::uint32_t flow_hash(const Frame& frame) noexcept {
  // Ethernet addresses plus, for IPv4, addresses and ports: one flow stays
  // on one queue.
  std::uint8_t tuple[12] = {};
  std::uint32_t h = 2166136261u;
  auto mix = [&h](const std::uint8_t* p, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  };
  mix(frame.eth, 12);
  if (frame.eth[12] == 0x08 && frame.eth[13] == 0x00 && gather(frame, 26, tuple, 12) == 12)
    mix(tuple, 12);
  // Finalize (murmur3 fmix32): FNV's low bits depend on few input bits, and
  // the queue is chosen by the low bits.
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

}  // namespace

GuestPort::GuestPort(std::uint32_t id, std::string name, std::uint32_t uplink, Options options,
                     MacLearner* learner)
    : Port(id, std::move(name), PortKind::kGuest, uplink),
      options_(options),
      tunables_(options.tunables),
      source_(options.mac_policy, options.mac, learner),
      max_frame_(net::max_frame_for_mtu(options.mtu)),
      backlog_(kBacklogFrames,
               std::max(net::max_frame_for_mtu(options.mtu), net::max_frame_for_mtu(1500))) {
  tx_spans_.reserve(64);
  rx_chains_.resize(4);
  flood_.set_rate(tunables_.flood_rate);
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

  q.kick = std::move(start.kick);
  q.call = std::move(start.call);
  q.err = std::move(start.err);
  q.running = true;
  q.error_reported = false;
  status_[vring].error.store(virtio::QueueError::kNone, std::memory_order_relaxed);
  status_[vring].state.store(QueueState::kRunning, std::memory_order_relaxed);
  if (q.ring.attach(std::move(start.memory), start.ring) != virtio::QueueError::kNone) {
    report_broken(q, vring);
  } else {
    // We are polling now; guest notifications are re-enabled before we sleep
    // (TX) or not at all (RX: frames are dropped, not queued, without buffers).
    q.ring.disable_notifications();
  }
  refresh_rx_list();
  wait_fds_changed();
}

void GuestPort::mac_learned(const net::MacAddress& mac) noexcept {
  source_.learned(mac);
  counters().mac_learned.add();
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
}

std::uint16_t GuestPort::stop_queue(std::uint32_t vring) {
  if (vring >= kMaxVrings) return 0;
  Queue& q = queues_[vring];
  if (!is_tx(vring)) forget_backlog();  // the guest resets or goes: held frames are lost
  if (!q.running) return q.ring.last_avail_idx();
  flush(q);  // seed 001: nothing stays pending across a stop
  const std::uint16_t base = q.ring.last_avail_idx();
  q.ring.detach();
  q.kick.reset();
  q.call.reset();
  q.err.reset();
  q.running = false;
  status_[vring].state.store(QueueState::kStopped, std::memory_order_relaxed);
  status_[vring].error.store(virtio::QueueError::kNone, std::memory_order_relaxed);
  refresh_rx_list();
  wait_fds_changed();
  return base;
}

void GuestPort::refresh_rx_list() {
  rx_vrings_.clear();
  for (std::uint32_t v = 0; v < kMaxVrings; v += 2)
    if (queues_[v].running) rx_vrings_.push_back(v);
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
  if (q.err.valid()) signal_eventfd(q.err);
  wait_fds_changed();
}

// ---- guest TX -----------------------------------------------------------------

unsigned GuestPort::poll(Forwarder& forwarder) {
  // Held frames are tried again only when the guest may have posted buffers
  // (the receive queue's avail index moved), not every round: a guest that
  // posts too little for them would otherwise cost a ring walk per round.
  unsigned total = 0;
  if (!backlog_.empty() && (blocked_rx_ == nullptr || !blocked_rx_->ring.attached() ||
                            blocked_rx_->ring.driver_avail_idx() != blocked_avail_))
    total = drain_backlog();
  for (std::uint32_t v = 1; v < kMaxVrings; v += 2) {
    Queue& q = queues_[v];
    if (q.running && q.ring.usable()) total += poll_tx(q, v, forwarder);
  }
  return total;
}

unsigned GuestPort::poll_tx(Queue& q, std::uint32_t vring, Forwarder& forwarder) {
  unsigned n = 0;
  // Bounded cost per round: tx_burst chains, and at most kDescriptorsPerRound
  // descriptors walked, so a guest of long chains cannot hold up the others
  // on this thread.
  std::uint32_t walked = 0;
  while (n < tunables_.tx_burst && walked < kDescriptorsPerRound) {
    if (!q.ring.pop(tx_chain_, Direction::kDeviceReads, header_size_ + max_frame_)) {
      if (q.ring.broken()) report_broken(q, vring);
      break;
    }
    walked += tx_chain_.descriptors;
    Frame frame;
    if (tx_chain_.truncated) {
      counters().drop(DropReason::kOversize);  // longer than any frame it may send
    } else if (!frame_from_chain(tx_chain_, frame)) {
      counters().drop(DropReason::kMalformed);
    } else if (frame.len > max_frame_) {
      counters().drop(DropReason::kOversize);
    } else if (!source_.admit(frame.src(), forwarder.table(), this)) {
      counters().drop(DropReason::kSpoofedSource);
    } else if (frame.is_multicast() && !flood_.allow()) {
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
    }
    q.ring.add_used(tx_chain_.head, 0);
    if (q.ring.staged_used() >= tunables_.signal_batch) flush(q);
    ++n;
  }
  return n;
}

bool GuestPort::frame_from_chain(const DescriptorChain& chain, Frame& frame) {
  if (chain.readable_bytes < header_size_ + net::kEthernetHeader) return false;
  // The header may be split over descriptors (ANY_LAYOUT): gather it.
  Frame whole;
  whole.spans = chain.readable.data();
  whole.span_count = static_cast<std::uint32_t>(chain.readable.size());
  whole.len = chain.readable_bytes;
  NetHeader header{};
  gather(whole, 0, reinterpret_cast<std::uint8_t*>(&header), header_size_);

  tx_spans_.clear();
  std::uint32_t skip = header_size_;
  for (const Span& s : chain.readable) {
    if (skip >= s.len) {
      skip -= s.len;
      continue;
    }
    tx_spans_.push_back(Span{s.data + skip, s.len - skip});
    skip = 0;
  }
  frame.spans = tx_spans_.data();
  frame.span_count = static_cast<std::uint32_t>(tx_spans_.size());
  frame.len = chain.readable_bytes - header_size_;
  if (header.gso_type != NetHeader::kGsoNone) return false;  // no TSO/UFO was offered
  if (header.flags & NetHeader::kFlagNeedsCsum) {
    if (std::uint32_t{header.csum_start} + header.csum_offset + 2 > frame.len) return false;
    frame.offload.csum = ChecksumRequest{true, header.csum_start, header.csum_offset};
  }
  return load_ethernet_header(frame);
}

// ---- guest RX -----------------------------------------------------------------

GuestPort::Queue* GuestPort::pick_rx_queue(const Frame& frame) noexcept {
  if (rx_vrings_.empty()) return nullptr;
  const std::uint32_t v =
      rx_vrings_.size() == 1 ? rx_vrings_[0] : rx_vrings_[flow_hash(frame) % rx_vrings_.size()];
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
    counters().drop(DropReason::kPortNotReady);
    return Delivery::kDone;
  }
  if (!q->ring.usable()) {
    counters().drop(DropReason::kQueueBroken);
    return Delivery::kDone;
  }
  if (frame.len > max_frame_) {
    counters().drop(DropReason::kOversize);
    return Delivery::kDone;
  }
  const std::uint32_t need = header_size_ + frame.len;
  unsigned n = 0;
  std::uint32_t room = 0;
  while (room < need) {
    if (n == kMaxBuffersPerFrame) break;  // buffers this small: counted as too small below
    if (n == rx_chains_.size()) rx_chains_.emplace_back();
    if (!q->ring.pop(rx_chains_[n], Direction::kDeviceWrites)) {
      q->ring.unpop(static_cast<std::uint16_t>(n));
      if (q->ring.broken()) {
        report_broken(*q, static_cast<std::uint32_t>(q - queues_.data()));
        counters().drop(DropReason::kQueueBroken);
        return Delivery::kDone;
      }
      blocked_rx_ = q;
      blocked_avail_ = q->ring.driver_avail_idx();
      return Delivery::kNoBuffer;
    }
    room += rx_chains_[n].writable_bytes;
    ++n;
    if (!mergeable_) break;
  }
  if (room < need) {
    q->ring.unpop(static_cast<std::uint16_t>(n));
    counters().drop(DropReason::kRxBufferTooSmall);
    return Delivery::kDone;
  }

  NetHeader header{};
  header.num_buffers = static_cast<std::uint16_t>(n);
  std::uint16_t csum_value = 0;
  bool patch_csum = false;
  const ChecksumRequest& csum = frame.offload.csum;
  if (csum.needed) {
    if (guest_csum_) {
      header.flags = NetHeader::kFlagNeedsCsum;
      header.csum_start = csum.start;
      header.csum_offset = csum.offset;
    } else if (complete_checksum(frame, csum_value)) {
      patch_csum = true;  // the guest cannot take a partial checksum: finish it
    } else {
      q->ring.unpop(static_cast<std::uint16_t>(n));
      counters().drop(DropReason::kMalformed);
      return Delivery::kDone;
    }
  }
  ChainWriter out(rx_chains_, n);
  out.write(&header, header_size_);
  for (std::uint32_t i = 0; i < frame.span_count; ++i)
    out.write(frame.spans[i].data, frame.spans[i].len);
  if (patch_csum) {
    ChainWriter at(rx_chains_, n);
    at.write(nullptr, header_size_ + csum.start + csum.offset);
    at.write(&csum_value, sizeof csum_value);
  }
  std::uint32_t left = need;
  for (unsigned i = 0; i < n; ++i) {
    const std::uint32_t len = std::min(left, rx_chains_[i].writable_bytes);
    q->ring.add_used(rx_chains_[i].head, len);
    left -= len;
  }
  counters().tx_packets.add();
  counters().tx_bytes.add(frame.len);
  if (q->ring.staged_used() >= tunables_.signal_batch) flush(*q);
  return Delivery::kDone;
}

// ---- bursts, signals, sleeping ---------------------------------------------------

void GuestPort::flush(Queue& q) noexcept {
  if (q.ring.staged_used() == 0) return;
  q.ring.publish_used();
  if (q.ring.should_signal()) {
    if (q.call.valid()) {
      signal_eventfd(q.call);
      counters().interrupts.add();
    }
  } else {
    counters().interrupts_suppressed.add();
  }
}

void GuestPort::end_burst() {
  for (auto& q : queues_)
    if (q.running) flush(q);
}

bool GuestPort::prepare_sleep() {
  bool work = false;
  // Kicks are wanted on the TX queues, and on the RX queues while frames
  // wait for receive buffers (the guest's refill must wake us).
  const std::uint32_t step = backlog_.empty() ? 2 : 1;
  for (std::uint32_t v = backlog_.empty() ? 1 : 0; v < kMaxVrings; v += step) {
    Queue& q = queues_[v];
    if (q.running && q.ring.usable()) work = q.ring.enable_notifications() || work;
  }
  return work;
}

void GuestPort::after_wake() {
  for (std::uint32_t v = 0; v < kMaxVrings; ++v) {
    Queue& q = queues_[v];
    if (q.running && q.ring.usable()) q.ring.disable_notifications();
  }
}

void GuestPort::wait_fds(std::vector<WaitFd>& out, bool& needs_timer) {
  for (std::uint32_t v = 0; v < kMaxVrings; ++v) {
    Queue& q = queues_[v];
    if (!q.running || !q.ring.usable()) continue;
    if (q.kick.valid())
      out.push_back(WaitFd{q.kick.get(), EPOLLIN, true, this});
    else if (is_tx(v))
      needs_timer = true;  // no kick fd: this ring can only be polled
  }
}

}  // namespace xdpvhost::dataplane
