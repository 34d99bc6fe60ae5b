#include "dataplane/guest_port.hpp"

#include <sys/epoll.h>

#include <algorithm>

#include "net/ethernet.hpp"

namespace xdpvhost::dataplane {

GuestPort::GuestPort(std::uint32_t id, std::string name, std::uint32_t uplink, Options options,
                     MacLearner* learner)
    : Port(id, std::move(name), PortKind::kGuest, uplink),
      options_(options),
      tunables_(options.tunables),
      rings_(*this, net::max_frame_for_mtu(options.mtu)),
      tx_(rings_, *this, tunables_, {options.mac_policy, options.mac, options.holds_mac}, learner),
      rx_(rings_, counters(), tunables_, options.mtu) {}

// ---- commands ---------------------------------------------------------------

void GuestPort::start_queue(vhost::QueueStart&& start) {
  const std::uint32_t vring = start.vring;
  if (vring >= kMaxVrings) return;
  if (!GuestRings::is_tx(vring)) rx_.ring_started();
  rings_.start(std::move(start));
}

std::uint16_t GuestPort::stop_queue(std::uint32_t vring, vhost::RingStop why) {
  if (vring >= kMaxVrings) return 0;
  if (!GuestRings::is_tx(vring)) rx_.ring_stopping(vring, why);
  return rings_.stop(vring);
}

void GuestPort::set_mtu(std::uint32_t mtu) noexcept {
  // The frontend may lower the MTU (NET_SET_MTU), never raise it above the
  // configured one: the uplink's frame room and the backlog are sized by it.
  rings_.link().max_frame = net::max_frame_for_mtu(std::min(mtu, options_.mtu));
}

void GuestPort::peer_fd_blocked(int fd) {
  for (const std::uint32_t v : rings_.running()) {
    GuestQueue& q = rings_.queue(v);
    if (q.kick.valid() && q.kick.get() == fd) rings_.eventfd_blocked(q);
  }
}

// ---- the switch's rounds ----------------------------------------------------

unsigned GuestPort::poll(Forwarder& forwarder) {
  const unsigned held = rx_.drain_if_refilled();
  return held + tx_.poll(forwarder);
}

void GuestPort::end_burst() {
  for (const std::uint32_t v : rings_.running()) rings_.flush(rings_.queue(v));
}

bool GuestPort::prepare_sleep() {
  bool work = false;
  // Kicks are wanted on the TX queues, and on the RX queues while frames
  // wait for receive buffers (the guest's refill must wake us).
  // While a source is decided on, its frame waits on a transmit queue: the
  // answer (a command) wakes the thread, not the ring.
  const bool holding = tx_.holding();
  for (const std::uint32_t v : rx_.waiting() ? rings_.running() : rings_.tx_vrings()) {
    GuestQueue& q = rings_.queue(v);
    if (holding && GuestRings::is_tx(v)) continue;
    if (q.ring.usable()) work = q.ring.enable_notifications() || work;
  }
  return work;
}

void GuestPort::after_wake() {
  for (const std::uint32_t v : rings_.running()) {
    GuestQueue& q = rings_.queue(v);
    if (q.ring.usable()) q.ring.disable_notifications();
  }
}

void GuestPort::wait_fds(std::vector<WaitFd>& out, bool& needs_timer) {
  for (const std::uint32_t v : rings_.running()) {
    GuestQueue& q = rings_.queue(v);
    if (!q.ring.usable()) continue;
    if (q.kick.valid())
      out.push_back(WaitFd{q.kick.get(), EPOLLIN, true, this});
    else if (GuestRings::is_tx(v))
      needs_timer = true;  // no kick fd: this ring can only be polled
  }
}

}  // namespace xdpvhost::dataplane
