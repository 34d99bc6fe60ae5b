#pragma once
// One client's share of the thread that serves it. The CPU time the thread
// spends on the client's behalf (its own CPU clock, so time it is preempted
// is not charged), and the time it waits for service threads to carry out
// the client's requests, are taken from a balance; wall time gives it back
// at `share` of its length, up to `burst`. While the balance is below zero
// the client waits: wait() says how long. The control thread keeps one per
// vhost-user port, so that a frontend resetting its device in a loop (each
// reset a dozen messages and datapath commands) costs the other frontends,
// the control socket and -- where they share a core -- the service threads
// no more than its share.

#include <algorithm>
#include <chrono>
#include <cmath>

namespace xdpvhost::sys {

// The calling thread's CPU time so far (CLOCK_THREAD_CPUTIME_ID).
std::chrono::nanoseconds thread_cpu_time() noexcept;

// How long the calling thread has waited so far for other threads to do work
// on its behalf (the control thread in ServiceThread::call): what its CPU
// clock does not show, yet nobody else is served meanwhile.
std::chrono::nanoseconds thread_blocked_time() noexcept;
// The waiter adds each wait it measured.
void add_thread_blocked_time(std::chrono::nanoseconds wait) noexcept;

class CpuBudget {
 public:
  using Clock = std::chrono::steady_clock;
  struct Limits {
    std::chrono::nanoseconds burst;  // the balance at the start and at most
    double share;                    // of wall time credited back, in (0, 1]
  };

  CpuBudget(Limits limits, Clock::time_point now) noexcept
      : limits_(limits), balance_(limits.burst), last_(now) {}

  // Zero if the client may be served now, else how long until it may.
  std::chrono::nanoseconds wait(Clock::time_point now) noexcept {
    refill(now);
    if (balance_.count() >= 0) return {};
    return std::chrono::nanoseconds(
        static_cast<std::chrono::nanoseconds::rep>(std::ceil(-balance_.count() / limits_.share)));
  }
  void charge(std::chrono::nanoseconds spent) noexcept { balance_ -= spent; }
  std::chrono::nanoseconds balance() const noexcept { return balance_; }

 private:
  void refill(Clock::time_point now) noexcept {
    if (now <= last_) return;
    const auto credit = std::chrono::nanoseconds(static_cast<std::chrono::nanoseconds::rep>(
        static_cast<double>((now - last_).count()) * limits_.share));
    balance_ = std::min(limits_.burst, balance_ + credit);
    last_ = now;
  }

  Limits limits_;
  std::chrono::nanoseconds balance_;
  Clock::time_point last_;
};

// Charges a budget, when it goes out of scope, with what the calling thread
// spent meanwhile: its CPU time and the time it waited on other threads.
class TurnCharge {
 public:
  explicit TurnCharge(CpuBudget& budget) noexcept
      : budget_(budget), cpu_(thread_cpu_time()), blocked_(thread_blocked_time()) {}
  TurnCharge(const TurnCharge&) = delete;
  TurnCharge& operator=(const TurnCharge&) = delete;
  ~TurnCharge() { budget_.charge((thread_cpu_time() - cpu_) + (thread_blocked_time() - blocked_)); }

 private:
  CpuBudget& budget_;
  std::chrono::nanoseconds cpu_;
  std::chrono::nanoseconds blocked_;
};

}  // namespace xdpvhost::sys
