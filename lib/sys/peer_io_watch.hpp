#pragma once
// A syscall on an fd that a peer holds too can sleep although we set
// O_NONBLOCK on it: the flag belongs to the open file description, which
// SCM_RIGHTS shares, and the peer may clear it again. An eventfd write then
// sleeps while the counter is full, a read while it is zero -- for as long as
// the peer likes, and with it every port of the thread.
//
// The thread that does such I/O runs each call inside a PeerIoWatch::Call.
// A watcher on another thread calls check() periodically; a call it finds
// still open at two checks in a row, on a thread the kernel has asleep, is
// sent kSignal, whose handler does nothing and is installed without
// SA_RESTART: the sleeping syscall returns EINTR, and its caller gives up
// that fd (breaks the peer's queue). A thread that is running or waits for a
// CPU (state R: preempted on a loaded node) is left alone: its call is not
// sleeping, and the next check looks again.
//
// A signal that arrives after the call ended does no harm: a syscall on a
// non-blocking fd never sleeps, so nothing else sees EINTR but a sleep in
// epoll_wait (a wakeup, as any other).
//
// Memory orders: the sequence is written by the watched thread only and read
// by the watcher; relaxed suffices, since a stale read only delays the
// signal by one check (the syscall itself orders the store before it sleeps).

#include <pthread.h>
#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>

namespace xdpvhost::sys {

class PeerIoWatch {
 public:
  // Ignored by default; nothing else in the daemon uses it.
  static constexpr int kSignal = SIGURG;

  // Installs the handler of kSignal (once per process; idempotent).
  static void install_handler() noexcept;

  // On the watched thread, before its first Call: this thread is the one
  // check() interrupts, and the one Call uses.
  void bind_to_current_thread() noexcept;

  // One syscall on a peer's fd in progress on the bound thread (RAII).
  // Returns at once if the thread is not bound to a watch.
  class Call {
   public:
    Call() noexcept : watch_(current_) {
      if (watch_) watch_->advance();  // odd: in a call
    }
    ~Call() {
      if (watch_) watch_->advance();  // even: out of it
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

   private:
    PeerIoWatch* watch_;
  };

  // On the watcher's thread (one only): sends kSignal if the call open at
  // the last check is still open and the thread sleeps; true then.
  bool check() noexcept;
  // Calls check() interrupted so far (any thread).
  std::uint64_t interrupts() const noexcept { return interrupts_.load(std::memory_order_relaxed); }

 private:
  void advance() noexcept {
    seq_.store(seq_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  static thread_local PeerIoWatch* current_;

  std::atomic<std::uint64_t> seq_{0};  // odd while a call is open
  std::atomic<bool> bound_{false};
  pthread_t thread_{};
  pid_t tid_ = 0;                // for its scheduler state in /proc
  std::uint64_t last_seen_ = 0;  // the watcher's
  std::atomic<std::uint64_t> interrupts_{0};
};

}  // namespace xdpvhost::sys
