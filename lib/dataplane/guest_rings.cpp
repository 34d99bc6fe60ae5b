#include "dataplane/guest_rings.hpp"

#include <unistd.h>

#include <cerrno>

#include <spdlog/spdlog.h>

#include "dataplane/port.hpp"
#include "net/ethernet.hpp"
#include "sys/log_rate.hpp"
#include "sys/peer_io_watch.hpp"
#include "virtio/features.hpp"
#include "virtio/net_header.hpp"

namespace xdpvhost::dataplane {

using virtio::Feature;

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

}  // namespace

std::uint32_t GuestLink::longest_sent() const noexcept {
  return (host_tso4 || host_tso6 || host_uso) ? net::kMaxGsoFrame : max_frame;
}

void GuestLink::set_features(std::uint64_t features) noexcept {
  header_size = static_cast<std::uint32_t>(virtio::net_header_size(features));
  mergeable = virtio::has(features, Feature::kNetMrgRxbuf);
  guest_csum = virtio::has(features, Feature::kNetGuestCsum);
  guest_offloads = net::GuestOffloads{guest_csum, virtio::has(features, Feature::kNetGuestTso4),
                                      virtio::has(features, Feature::kNetGuestTso6),
                                      virtio::has(features, Feature::kNetGuestEcn),
                                      virtio::has(features, Feature::kNetGuestUso4) &&
                                          virtio::has(features, Feature::kNetGuestUso6)};
  host_tso4 = virtio::has(features, Feature::kNetHostTso4);
  host_tso6 = virtio::has(features, Feature::kNetHostTso6);
  host_uso = virtio::has(features, Feature::kNetHostUso);
  host_ecn = virtio::has(features, Feature::kNetHostEcn);
}

GuestRings::GuestRings(Port& port, std::uint32_t max_frame) : port_(port) {
  link_.max_frame = max_frame;
  rx_vrings_.reserve(kMaxQueuePairs);  // no allocation when rings start and stop
  tx_vrings_.reserve(kMaxQueuePairs);
  running_vrings_.reserve(kMaxVrings);
}

bool GuestRings::broken() const noexcept {
  for (const auto& s : status_)
    if (s.state.load(std::memory_order_relaxed) == QueueState::kBroken) return true;
  return false;
}

void GuestRings::start(vhost::QueueStart&& start) {
  const std::uint32_t vring = start.vring;
  GuestQueue& q = queues_[vring];
  if (q.running) stop(vring);
  features_.store(start.features, std::memory_order_relaxed);
  link_.set_features(start.features);
  takes_gso_.store((link_.guest_offloads.tso4 ? 1u : 0u) | (link_.guest_offloads.tso6 ? 2u : 0u),
                   std::memory_order_relaxed);

  q.kick = std::move(start.kick);
  q.call = std::move(start.call);
  q.err = std::move(start.err);
  q.running = true;
  q.error_reported = false;
  q.short_valid = false;
  status_[vring].error.store(virtio::QueueError::kNone, std::memory_order_relaxed);
  status_[vring].state.store(QueueState::kRunning, std::memory_order_relaxed);
  if (q.ring.attach(std::move(start.memory), start.ring) != virtio::QueueError::kNone) {
    report_broken(q);
  } else {
    // We are polling now; guest notifications are re-enabled before we sleep
    // (TX, and RX while frames wait for its buffers: GuestPort::prepare_sleep).
    q.ring.disable_notifications();
  }
  refresh_lists();
  port_.wait_fds_changed();
}

std::uint16_t GuestRings::stop(std::uint32_t vring) {
  GuestQueue& q = queues_[vring];
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
  refresh_lists();
  port_.wait_fds_changed();
  return base;
}

void GuestRings::refresh_lists() {
  rx_vrings_.clear();
  tx_vrings_.clear();
  running_vrings_.clear();
  for (std::uint32_t v = 0; v < kMaxVrings; ++v) {
    if (!queues_[v].running) continue;
    running_vrings_.push_back(v);
    (is_tx(v) ? tx_vrings_ : rx_vrings_).push_back(v);
  }
}

void GuestRings::flush(GuestQueue& q) noexcept {
  if (q.ring.staged_used() == 0) return;
  q.ring.publish_used();
  if (q.ring.should_signal()) {
    if (q.call.valid()) {
      if (!signal_eventfd(q.call)) [[unlikely]] {
        eventfd_blocked(q);
        return;
      }
      port_.counters().interrupts.add();
    }
  } else {
    port_.counters().interrupts_suppressed.add();
  }
}

void GuestRings::report_broken(GuestQueue& q) {
  if (q.error_reported) return;
  q.error_reported = true;
  const std::uint32_t vring = vring_of(q);
  const auto error = q.ring.error();
  status_[vring].error.store(error, std::memory_order_relaxed);
  status_[vring].state.store(QueueState::kBroken, std::memory_order_relaxed);
  PortCounters& counters = port_.counters();
  counters.queue_errors.add();
  // Once per break; a guest that breaks its rings in a loop is rate-limited.
  if (sys::worth_logging(counters.queue_errors.get()))
    spdlog::warn(
        "port {}: vring {} broken ({}); it stays stopped until the guest resets the "
        "device (queue error #{})",
        port_.name(), vring, virtio::to_string(error), counters.queue_errors.get());
  if (q.err.valid()) (void)signal_eventfd(q.err);  // blocked: it is broken already
  port_.wait_fds_changed();
}

void GuestRings::eventfd_blocked(GuestQueue& q) {
  q.ring.refuse(virtio::QueueError::kEventfdBlocks);
  report_broken(q);
}

}  // namespace xdpvhost::dataplane
