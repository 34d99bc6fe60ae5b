#pragma once
// One client's share of the thread that serves it. The CPU time the thread
// spends on the client's behalf (its own CPU clock, so time it is preempted
// is not charged), and the CPU time service threads spend carrying out the
// client's requests (theirs, so neither their other work nor a node too
// loaded to run them is charged), are taken from a balance; wall time gives it back
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

// The CPU time other threads have spent so far on work the calling thread
// handed them (the control thread's commands in ServiceThread::call): what
// its own CPU clock does not show. The wall time it waited for them is not
// it: that is mostly their other work, or a node too loaded to run them.
std::chrono::nanoseconds thread_delegated_cpu_time() noexcept;
// The caller adds what each such piece of work cost the thread that did it.
void add_thread_delegated_cpu_time(std::chrono::nanoseconds spent) noexcept;

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
// spent meanwhile: its CPU time and the CPU time of the work it handed to
// other threads.
class TurnCharge {
 public:
  explicit TurnCharge(CpuBudget& budget) noexcept
      : budget_(budget), cpu_(thread_cpu_time()), delegated_(thread_delegated_cpu_time()) {}
  TurnCharge(const TurnCharge&) = delete;
  TurnCharge& operator=(const TurnCharge&) = delete;
  ~TurnCharge() {
    budget_.charge((thread_cpu_time() - cpu_) + (thread_delegated_cpu_time() - delegated_));
  }

 private:
  CpuBudget& budget_;
  std::chrono::nanoseconds cpu_;
  std::chrono::nanoseconds delegated_;
};

}  // namespace xdpvhost::sys
