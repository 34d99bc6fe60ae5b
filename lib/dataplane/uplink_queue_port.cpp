#include "dataplane/uplink_queue_port.hpp"

#include <sys/epoll.h>

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

namespace xdpvhost::dataplane {

namespace {

// Descriptors one copy-mode sendto() may send (XDP_MAX_TX_SKB_BUDGET, Linux
// 6.17+; the kernel default is 32). Fewer syscalls per frame is what counts
// on this path: the kernel work of each frame happens inside sendto().
constexpr std::uint32_t kTxBudget = 256;

}  // namespace

UplinkQueuePort::UplinkQueuePort(std::uint32_t id, std::string name, std::uint32_t uplink,
                                 Options options)
    : Port(id, std::move(name), PortKind::kUplink, uplink), q_(*this, options), rx_(q_), tx_(q_) {
  q_.status.napi_busy_poll_requested.store(options.tunables.napi_busy_poll);
}

UplinkQueuePort::~UplinkQueuePort() {
  unbind().close();  // detached from its thread by now: this is the control thread
}

std::string UplinkQueuePort::napi_busy_poll_reason() const {
  std::lock_guard lock(reason_mutex_);
  return reason_;
}

void UplinkQueuePort::set_reason(std::string reason) {
  std::lock_guard lock(reason_mutex_);
  reason_ = std::move(reason);
}

// ---- commands -------------------------------------------------------------------

UplinkQueuePort::Released UplinkQueuePort::bind(std::unique_ptr<xsk::Umem> umem,
                                                std::unique_ptr<xsk::XskSocket> socket) {
  Released previous = unbind();
  q_.umem = std::move(umem);
  q_.socket = std::move(socket);
  tx_.bound();
  const std::uint32_t budget = std::min(kTxBudget, q_.socket->config().tx_size);
  if (int rc = q_.socket->set_tx_budget(budget); rc != 0)
    spdlog::info(
        "uplink {}: XDP_MAX_TX_SKB_BUDGET not available ({}); the kernel sends 32 "
        "frames per sendto",
        name(), -rc);
  q_.umem->refill(q_.umem->fill_free(q_.umem->config().fill_size));
  q_.status.bound.store(true);
  q_.status.zero_copy.store(q_.socket->zero_copy());
  q_.status.multi_buffer.store(q_.socket->multi_buffer());
  q_.status.tx_checksum_offload.store(tx_.checksum_offload());
  std::uint32_t napi = 0;
  xsk::read_napi_id(q_.socket->fd(), napi);
  q_.status.napi_id.store(napi);
  starvation_.reset();
  apply_napi_busy_poll(/*prefer=*/true);
  wait_fds_changed();
  return previous;
}

UplinkQueuePort::Released UplinkQueuePort::unbind() {
  if (q_.socket) {
    refresh_statistics();
    stats_base_ += stats_last_;
    stats_last_ = {};
  }
  Released released;
  released.socket = std::move(q_.socket);
  released.umem = std::move(q_.umem);
  napi_active_ = false;
  q_.status.bound.store(false);
  q_.status.napi_busy_poll_active.store(false);
  q_.status.napi_id.store(0);
  wait_fds_changed();
  return released;
}

UplinkQueuePort::Released UplinkQueuePort::set_flood_socket(
    std::unique_ptr<nic::FloodSocket> flood) {
  Released released;
  released.flood = std::exchange(q_.flood, std::move(flood));
  wait_fds_changed();
  return released;
}

void UplinkQueuePort::set_tunables(const Tunables& t) {
  const bool napi_changed = t.napi_busy_poll != q_.options.tunables.napi_busy_poll ||
                            t.busy_poll_budget != q_.options.tunables.busy_poll_budget ||
                            t.busy_poll_us != q_.options.tunables.busy_poll_us;
  q_.options.tunables = t;
  rx_.reserve_burst(t.rx_burst);
  q_.status.napi_busy_poll_requested.store(t.napi_busy_poll);
  if (napi_changed && q_.socket) {
    starvation_.reset();
    apply_napi_busy_poll(/*prefer=*/true);
  }
}

void UplinkQueuePort::apply_napi_busy_poll(bool prefer) {
  napi_active_ = false;
  q_.status.napi_busy_poll_active.store(false);
  if (!q_.socket) return;
  const auto& t = q_.options.tunables;
  if (!t.napi_busy_poll) {
    xsk::apply_busy_poll(q_.socket->fd(), xsk::BusyPollConfig{0, 0, false});
    set_reason("not requested");
    return;
  }
  // The socket busy-polls NAPI for up to busy_poll_us per syscall (at least
  // a little, so that a request actually polls).
  xsk::BusyPollConfig config;
  config.usecs = std::max<std::uint32_t>(t.busy_poll_us, 1);
  config.budget = static_cast<std::uint16_t>(std::min<std::uint32_t>(t.busy_poll_budget, 65535));
  config.prefer = prefer;
  const xsk::BusyPollOutcome outcome = xsk::apply_busy_poll(q_.socket->fd(), config);
  q_.status.napi_id.store(outcome.napi_id);
  napi_prefer_ = prefer && outcome.applied;
  if (!outcome.applied) {
    set_reason(outcome.reason);
  } else if (outcome.napi_id == 0) {
    // The kernel busy-polls the NAPI context the socket's napi id names; with
    // id 0 (a device without NAPI such as veth, or no frame seen yet) a
    // recvfrom() would be a wasted syscall. Housekeeping looks again.
    set_reason("no napi id on the socket yet (veth and other devices without NAPI never get one)");
  } else {
    napi_active_ = true;
    set_reason(prefer ? "ok (preferred busy polling)" : "ok");
  }
  q_.status.napi_busy_poll_active.store(napi_active_);
}

// ---- rounds -----------------------------------------------------------------------

unsigned UplinkQueuePort::poll(Forwarder& forwarder) {
  if (!q_.socket) return 0;
  q_.umem->reclaim_completions(q_.umem->config().comp_size);
  const unsigned n = rx_.poll(forwarder);
  // Frames go back to the fill ring at once. A zero-copy driver that ran
  // out of them stopped and asked to be woken (need_wakeup): without the
  // syscall RX stays stopped for as long as this thread is kept busy. (Only
  // zero-copy drivers set the flag; in copy mode this is no syscall.)
  q_.umem->refill(q_.umem->config().fill_size);
  if (q_.socket->zero_copy() && !napi_active_ && q_.umem->fill_needs_wakeup())
    q_.socket->wakeup_rx();
  if (napi_active_) {
    if (n == 0 && q_.socket->rx_pending() == 0) {
      // NAPI busy polling (docs/techniques.md): nothing on the rings -- drive the NIC's NAPI
      // ourselves.
      q_.socket->wakeup_rx();
      q_.counters.napi_polls.add();
    }
    if (napi_prefer_ && starvation_.round(n)) {
      xsk::StarvationSample sample;
      sample.offered = offered_.load(std::memory_order_relaxed);
      q_.socket->read_statistics(sample.xsk);
      sample.fill_level = q_.umem->fill_level();
      const xsk::StarvationVerdict verdict = starvation_.evaluate(sample);
      if (verdict.starving) {
        spdlog::warn(
            "uplink {}: preferred busy polling starves RX ({}); falling back to "
            "non-preferred busy polling",
            name(), verdict.reason);
        apply_napi_busy_poll(/*prefer=*/false);
        set_reason("fell back from preferred busy polling: " + verdict.reason);
        starvation_.reset();
      }
    }
  }
  return n;
}

bool UplinkQueuePort::prepare_sleep() {
  if (!q_.socket) return false;
  // In copy mode descriptors left on the TX ring are sent only by another
  // sendto(): don't sleep on them. Frames on the RX ring are work too.
  return (q_.link_up && q_.socket->tx_pending() != 0) || q_.socket->rx_pending() != 0;
}

void UplinkQueuePort::wait_fds(std::vector<WaitFd>& out, bool&) {
  if (q_.socket) out.push_back(WaitFd{q_.socket->fd(), EPOLLIN, false, this, true});
  // Read only by poll(), which needs a bound socket: a level-triggered fd
  // nobody reads would wake the thread without end.
  if (q_.flood && q_.socket) out.push_back(WaitFd{q_.flood->fd(), EPOLLIN, false, this});
}

void UplinkQueuePort::refresh_statistics() noexcept {
  xsk::XskStatistics s;
  if (q_.socket->read_statistics(s) != 0) return;
  stats_last_ = s;
  // Kernel counters are per socket: a rebound socket starts from zero, so
  // ours count every socket the queue had and never go backwards.
  const xsk::XskStatistics total = stats_base_ + s;
  UplinkQueueCounters& c = q_.counters;
  c.rx_dropped.raise_to(total.rx_dropped);
  c.rx_invalid_descs.raise_to(total.rx_invalid_descs);
  c.tx_invalid_descs.raise_to(total.tx_invalid_descs);
  c.rx_ring_full.raise_to(total.rx_ring_full);
  c.rx_fill_ring_empty_descs.raise_to(total.rx_fill_ring_empty_descs);
  c.tx_ring_empty_descs.raise_to(total.tx_ring_empty_descs);
}

void UplinkQueuePort::housekeeping() {
  if (!q_.socket) return;
  refresh_statistics();
  if (q_.flood) {
    nic::FloodSocket::Stats s;
    if (q_.flood->read_and_reset_stats(s) == 0 && s.dropped != 0)
      q_.counters.flood_dropped.add(s.dropped);
  }
  if (q_.options.tunables.napi_busy_poll && !napi_active_ && q_.status.napi_id.load() == 0) {
    std::uint32_t napi = 0;
    if (xsk::read_napi_id(q_.socket->fd(), napi) == 0 && napi != 0)
      apply_napi_busy_poll(/*prefer=*/true);
  }
}

}  // namespace xdpvhost::dataplane
