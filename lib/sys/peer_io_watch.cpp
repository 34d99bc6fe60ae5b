#include "sys/peer_io_watch.hpp"

namespace xdpvhost::sys {

thread_local PeerIoWatch* PeerIoWatch::current_ = nullptr;

namespace {
void on_peer_io_signal(int /*signal*/) {}
}  // namespace

void PeerIoWatch::install_handler() noexcept {
  struct sigaction action {};
  action.sa_handler = on_peer_io_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: the sleeping syscall returns EINTR
  ::sigaction(kSignal, &action, nullptr);
}

void PeerIoWatch::bind_to_current_thread() noexcept {
  thread_ = ::pthread_self();
  current_ = this;
  // The signal reaches this thread even if its creator blocked it.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, kSignal);
  ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  bound_.store(true, std::memory_order_release);
}

bool PeerIoWatch::check() noexcept {
  const std::uint64_t seq = seq_.load(std::memory_order_relaxed);
  const bool stuck = (seq & 1) != 0 && seq == last_seen_;
  last_seen_ = seq;
  if (!stuck || !bound_.load(std::memory_order_acquire)) return false;
  if (::pthread_kill(thread_, kSignal) != 0) return false;
  interrupts_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace xdpvhost::sys
