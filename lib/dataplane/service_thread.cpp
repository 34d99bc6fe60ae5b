#include "dataplane/service_thread.hpp"

#include <pthread.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include <spdlog/spdlog.h>

namespace xdpvhost::dataplane {
namespace {

std::uint64_t monotonic_ns() noexcept {
  timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<std::uint64_t>(ts.tv_nsec);
}

constexpr std::uint64_t kHousekeepingNs = 100'000'000;
constexpr int kMaxEvents = 64;
constexpr std::uint64_t kUnwatchAfterAwakeNs = 200'000;

// epoll data for the two fds that are not a port's.
WaitFd kCommandMarker;
WaitFd kDoorbellMarker;

}  // namespace

ServiceThread::ServiceThread(std::uint16_t index, std::optional<int> cpu, const Tunables& tunables)
    : index_(index),
      cpu_(cpu),
      tunables_(tunables),
      busy_poll_us_(tunables.busy_poll_us),
      forwarder_(index) {}

ServiceThread::~ServiceThread() {
  stop();
}

void ServiceThread::connect(const std::vector<ServiceThread*>& all) {
  peers_ = all;
  inboxes_.clear();
  for (std::size_t i = 0; i < all.size(); ++i)
    inboxes_.push_back(i == index_ ? nullptr : std::make_unique<Mailbox>());
}

void ServiceThread::start() {
  // Outboxes are the peers' inboxes for frames from this thread.
  std::vector<Mailbox*> outboxes;
  for (std::size_t i = 0; i < peers_.size(); ++i)
    outboxes.push_back(i == index_ ? nullptr : &peers_[i]->inbox(index_));
  forwarder_.set_outboxes(std::move(outboxes));
  running_.store(true);
  thread_ = std::thread([this] { run(); });
}

void ServiceThread::stop() {
  if (!thread_.joinable()) return;
  stop_requested_.store(true);
  post([] {});  // wakes the thread if it sleeps
  thread_.join();
  running_.store(false);
  state_.store(State::kStopped);
}

void ServiceThread::attach_port(Port* port) {
  ports_.push_back(port);
  wait_fds_dirty_ = true;
}

void ServiceThread::detach_port(Port* port) {
  std::erase(ports_, port);
  wait_fds_dirty_ = true;
}

bool ServiceThread::release_port(Port* port) {
  // Frames for it that other threads queued here go first; and so do the
  // frames it sent through this thread's outboxes, or one it sends from the
  // new thread could reach the same destination before them.
  for (const auto& box : inboxes_)
    if (box && box->holds(port->id())) return false;
  for (std::size_t t = 0; t < peers_.size(); ++t)
    if (t != index_ && peers_[t]->inbox(index_).holds_from(port->id())) return false;
  if (!port->settled()) return false;
  detach_port(port);
  return true;
}

void ServiceThread::set_tunables(const Tunables& t) {
  tunables_ = t;
  busy_poll_us_.store(t.busy_poll_us, std::memory_order_relaxed);
}

Port* ServiceThread::local_port(std::uint32_t id) const noexcept {
  for (Port* p : ports_)
    if (p->id() == id) return p;
  return nullptr;
}

void ServiceThread::declare_stalled() {
  if (stalled_.exchange(true)) return;
  spdlog::critical(
      "service thread {}: a control command did not run within {} ms; the thread is declared "
      "stalled, its ports fail and are not touched again",
      index_, kCallDeadline.count());
}

void ServiceThread::ring_doorbell() noexcept {
  // Pairs with the fence in sleep(): either we see the consumer asleep and
  // ring, or it sees our frames before it sleeps.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load(std::memory_order_relaxed)) doorbell_.notify();
}

void ServiceThread::run() {
  const std::string name = "xdpvhost-svc" + std::to_string(index_);
  ::pthread_setname_np(::pthread_self(), name.c_str());
  tid_.store(::gettid(), std::memory_order_relaxed);
  if (cpu_) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(*cpu_, &set);
    if (::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) != 0)
      spdlog::warn("service thread {}: cannot pin to cpu {}", index_, *cpu_);
  }
  peer_io_.bind_to_current_thread();
  state_.store(State::kBusy, std::memory_order_relaxed);
  std::uint64_t idle_since = 0;
  std::uint64_t last_housekeeping = monotonic_ns();
  std::uint64_t round_start = last_housekeeping;
  while (!stop_requested_.load(std::memory_order_relaxed)) {
    heartbeat_.beat();
    if (commands_.pending()) {
      counters_.commands.add(commands_.run_pending());
      round_start = monotonic_ns();  // a command's time is not a port's
    }
    const unsigned work = poll_round(round_start);
    const std::uint64_t now = monotonic_ns();
    if (work != 0) counters_.busy_ns.add(now - round_start);
    round_start = now;
    if (wants_housekeeping_ && now - last_housekeeping >= kHousekeepingNs) {
      last_housekeeping = now;
      for (Port* p : ports_)
        if (p->wants_housekeeping()) p->housekeeping();
      round_start = monotonic_ns();
    }
    if (work != 0) {
      // Awake for a while and working: the rings are polled, the sockets
      // need no watching. Not right after a wakeup: the reply to a single
      // request follows within a few rounds, and the syscall would sit in
      // its path; a thread that goes back to sleep soon keeps them.
      if (sleep_only_fds_watched_ && now - awake_since_ >= kUnwatchAfterAwakeNs)
        watch_sleep_only_fds(false);
      counters_.busy_iterations.add();
      counters_.bursts.record(work);
      idle_since = 0;
      state_.store(State::kBusy, std::memory_order_relaxed);
      continue;
    }
    counters_.empty_iterations.add();
    if (idle_since == 0) idle_since = now;
    // Busy polling with a timeout (docs/techniques.md): keep polling for busy_poll_us after the
    // last work; leave at once when a control command is queued.
    const std::uint64_t budget_ns = std::uint64_t{tunables_.busy_poll_us} * 1000;
    if (now - idle_since < budget_ns && !commands_.pending()) {
      state_.store(State::kPolling, std::memory_order_relaxed);
      continue;
    }
    sleep();
    idle_since = 0;
    awake_since_ = monotonic_ns();
    round_start = awake_since_;
  }
  // Leave nothing pending for the guests.
  for (Port* p : ports_) p->end_burst();
}

unsigned ServiceThread::poll_round(std::uint64_t start_ns) {
  // What each port costs: the time from the previous port that took frames
  // (or the round's start) to the end of its own poll, charged when it took
  // some. Polling an idle port costs a few loads, so the clock is read only
  // after work; an idle round reads it not at all.
  unsigned work = 0;
  std::uint64_t mark = start_ns;
  for (Port* p : ports_) {
    const unsigned n = p->poll(forwarder_);
    if (n == 0) continue;
    work += n;
    const std::uint64_t now = monotonic_ns();
    p->counters().busy_ns.add(now - mark);
    mark = now;
  }
  work += drain_inboxes();
  for (Port* p : ports_) p->end_burst();
  forwarder_.for_each_pushed([this](std::uint16_t t) { peers_[t]->ring_doorbell(); });
  return work;
}

unsigned ServiceThread::drain_inboxes() {
  unsigned n = 0;
  for (auto& box : inboxes_) {
    if (!box || box->empty()) continue;
    n += box->drain(tunables_.rx_burst, [this](std::uint32_t id, const Frame& frame) {
      Port* p = local_port(id);
      if (p == nullptr) {
        counters_.dropped_port_gone.add();
        return true;
      }
      // One rule for a full destination (lib/dataplane/README.md): a unicast
      // frame waits, here in the mailbox as on its sender's ring.
      if (!frame.is_multicast() && !p->can_accept(frame)) return false;
      p->deliver(frame);
      return true;
    });
  }
  return n;
}

void ServiceThread::rebuild_wait_set() {
  wait_fds_.clear();
  needs_timer_ = false;
  wants_housekeeping_ = false;
  for (Port* p : ports_) {
    p->wait_fds(wait_fds_, needs_timer_);
    wants_housekeeping_ = wants_housekeeping_ || p->wants_housekeeping();
  }
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  sleep_only_fds_watched_ = false;
  auto add = [this](int fd, std::uint32_t events, WaitFd* data) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = data;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0 && !epoll_error_logged_) {
      epoll_error_logged_ = true;  // would repeat at every rebuild
      spdlog::warn("service thread {}: epoll_ctl add fd {} failed: {}", index_, fd,
                   std::strerror(errno));
    }
  };
  add(commands_.fd(), EPOLLIN, &kCommandMarker);
  add(doorbell_.get(), EPOLLIN, &kDoorbellMarker);
  for (WaitFd& w : wait_fds_)
    if (!w.only_while_sleeping) add(w.fd, w.is_kick ? w.events | EPOLLET : w.events, &w);
  wait_fds_dirty_ = false;
}

// Added when the thread first sleeps, removed once it has been awake
// kUnwatchAfterAwakeNs with work: an idle thread that wakes for housekeeping,
// or one answering single requests, keeps them (each add polls the socket,
// and in copy mode that poll tries to transmit).
//
// A port whose wait fds changed meanwhile (an uplink queue unbound while
// frames flow) may have closed one of them: its number is not ours to pass
// to epoll_ctl any more (EBADF, or another fd that took the number). The
// set is rebuilt from the ports instead, without the sleep-only fds.
void ServiceThread::watch_sleep_only_fds(bool watch) {
  if (rebuild_wait_set_if_changed() && !watch) return;  // the new set has none of them
  sleep_only_fds_watched_ = watch;
  for (WaitFd& w : wait_fds_) {
    if (!w.only_while_sleeping) continue;
    epoll_event ev{};
    ev.events = w.events;  // level-triggered: a ring filled before the add still wakes us
    ev.data.ptr = &w;
    if (::epoll_ctl(epoll_.get(), watch ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w.fd, &ev) != 0 &&
        !epoll_error_logged_) {
      epoll_error_logged_ = true;
      spdlog::warn("service thread {}: epoll_ctl {} fd {} failed: {}", index_,
                   watch ? "add" : "del", w.fd, std::strerror(errno));
    }
  }
}

bool ServiceThread::rebuild_wait_set_if_changed() {
  for (Port* p : ports_) wait_fds_dirty_ = p->take_wait_fds_changed() || wait_fds_dirty_;
  if (!wait_fds_dirty_) return false;
  rebuild_wait_set();
  return true;
}

void ServiceThread::sleep() {
  rebuild_wait_set_if_changed();
  // Kick eventfds are edge-triggered and read only when epoll reports them:
  // no syscall per sleep for them. A kick that came before notifications are
  // re-armed is covered by the re-check of every ring in prepare_sleep().
  bool work = false;
  for (Port* p : ports_) work = p->prepare_sleep() || work;
  bool woke_for_commands = false;
  if (!work) {
    sleeping_.store(true, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool inbox_pending = false;
    for (auto& box : inboxes_) inbox_pending = inbox_pending || (box && !box->empty());
    if (!inbox_pending && !commands_.pending() && !stop_requested_.load()) {
      state_.store(State::kSleeping, std::memory_order_relaxed);
      counters_.sleeps.add();
      const int timeout = needs_timer_ ? 1 : (wants_housekeeping_ ? 100 : -1);
      epoll_event events[kMaxEvents];
      if (!sleep_only_fds_watched_) watch_sleep_only_fds(true);
      const int n = ::epoll_wait(epoll_.get(), events, kMaxEvents, timeout);
      counters_.wakeups.add();
      for (int i = 0; i < n; ++i) {
        auto* w = static_cast<WaitFd*>(events[i].data.ptr);
        if (w == &kCommandMarker) {
          woke_for_commands = true;
        } else if (w == &kDoorbellMarker) {
          doorbell_.drain();
        } else if (w->is_kick) {
          // The peer may have drained it since, and made it blocking.
          std::uint64_t value = 0;
          ssize_t n = 0;
          {
            const sys::PeerIoWatch::Call call;
            n = ::read(w->fd, &value, sizeof value);
          }
          if (n == sizeof value)
            w->port->counters().kicks.add(value);
          else if (n < 0 && errno == EINTR)
            w->port->peer_fd_blocked(w->fd);
        }
      }
    }
    sleeping_.store(false, std::memory_order_relaxed);
  }
  // The command eventfd stays readable until drained; only then, so that a
  // busy thread does not pay a syscall per sleep for it.
  if (woke_for_commands) commands_.clear_wakeup();
  for (Port* p : ports_) p->after_wake();
  state_.store(State::kBusy, std::memory_order_relaxed);
}

}  // namespace xdpvhost::dataplane
