#include "sys/peer_io_watch.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "sys/unique_fd.hpp"

namespace xdpvhost::sys {

thread_local PeerIoWatch* PeerIoWatch::current_ = nullptr;

namespace {
void on_peer_io_signal(int /*signal*/) {}

// The scheduler state of one of this process's threads ('S' asleep and
// interruptible, 'R' running or runnable, ...), from the third field of
// /proc/self/task/TID/stat; 0 if it cannot be read. The thread's name comes
// before it in parentheses and may hold any character: the state follows
// the last ')'.
char scheduler_state(pid_t tid) noexcept {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%d/stat", static_cast<int>(tid));
  const UniqueFd fd(::open(path, O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return 0;
  char stat[256];
  const ssize_t n = ::read(fd.get(), stat, sizeof stat - 1);
  if (n <= 0) return 0;
  stat[n] = 0;
  const char* end_of_name = std::strrchr(stat, ')');
  if (end_of_name == nullptr || end_of_name[1] != ' ') return 0;
  return end_of_name[2];
}
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
  tid_ = ::gettid();
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
  // Still in the call because it runs or waits for a CPU, not for the peer:
  // not interrupted, and looked at again at the next check (last_seen_ kept).
  // A state that cannot be read does not spare it.
  if (scheduler_state(tid_) == 'R') return false;
  if (::pthread_kill(thread_, kSignal) != 0) return false;
  interrupts_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace xdpvhost::sys
