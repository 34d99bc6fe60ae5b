#pragma once
// A service thread's sign of life. The thread beats once per poll round; the
// thread watcher (thread_watcher.hpp) checks it every interval. A thread that
// is awake -- not asleep in epoll, where nothing is owed -- yet has not
// finished a round for kDeadline has missed its heartbeat: a round stuck (a
// ring walk that does not end, a syscall that sleeps), or a thread starved of
// CPU. Each such silence counts once, however long it lasts; the longest
// silence seen is kept. What a stall of a command shows (ServiceThread::call)
// comes only when the control thread asks something of the thread; this
// shows without anyone asking.
//
// Memory orders: beats_ is written by the beating thread only and read by
// the watcher; relaxed suffices, since a stale read only makes a silence look
// one interval longer. The watcher's own fields are its alone; what it
// reports (misses, silences) is read by the control thread, relaxed as every
// counter.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "dataplane/counters.hpp"

namespace xdpvhost::dataplane {

class Heartbeat {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kDeadline{1000};

  // On the beating thread, once per round.
  void beat() noexcept { beats_.add(); }

  // On the watcher (one only), every interval; `asleep` says whether the
  // thread owes no beat (sleeping in epoll, stopped, not started). True when
  // this check finds a new miss.
  bool check(bool asleep, Clock::time_point now) noexcept {
    const std::uint64_t beats = beats_.get();
    if (asleep || beats != last_beats_ || !heard_at_) {
      last_beats_ = beats;
      heard_at_ = now;
      missing_ = false;
      silence_ns_.store(0, std::memory_order_relaxed);
      return false;
    }
    const auto silence =
        std::chrono::duration_cast<std::chrono::nanoseconds>(now - *heard_at_).count();
    silence_ns_.store(static_cast<std::uint64_t>(silence), std::memory_order_relaxed);
    if (static_cast<std::uint64_t>(silence) > longest_silence_ns_.load(std::memory_order_relaxed))
      longest_silence_ns_.store(static_cast<std::uint64_t>(silence), std::memory_order_relaxed);
    if (missing_ || now - *heard_at_ < kDeadline) return false;
    missing_ = true;
    misses_.add();
    return true;
  }

  // Any thread.
  std::uint64_t misses() const noexcept { return misses_.get(); }
  // How long the awake thread has gone without a round, as of the last check
  // (zero while it beats or sleeps).
  std::chrono::milliseconds silence() const noexcept { return ms(silence_ns_); }
  // Whether the current silence is a miss (health reports it while it lasts).
  bool missing_now() const noexcept { return silence() >= kDeadline; }
  std::chrono::milliseconds longest_silence() const noexcept { return ms(longest_silence_ns_); }

 private:
  static std::chrono::milliseconds ms(const std::atomic<std::uint64_t>& ns) noexcept {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::nanoseconds(ns.load(std::memory_order_relaxed)));
  }

  Counter beats_;
  // The watcher's.
  std::uint64_t last_beats_ = 0;
  std::optional<Clock::time_point> heard_at_;  // last check that found it beating or asleep
  bool missing_ = false;                       // this silence is counted already
  // What it reports.
  Counter misses_;
  std::atomic<std::uint64_t> silence_ns_{0};
  std::atomic<std::uint64_t> longest_silence_ns_{0};
};

}  // namespace xdpvhost::dataplane
