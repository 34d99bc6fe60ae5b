#pragma once
// Which one queue to move between service threads, from their measured
// load: the rebalancer's decision (controller/rebalancer.hpp measures and
// moves; this only decides, so that it can be checked line by line).
//
// A load is a share of one core over the measured interval: the time a
// thread (or a port on it) spent in poll rounds that moved frames
// (ThreadCounters::busy_ns, PortCounters::busy_ns). A thread's load is at
// least the sum of its ports' (it also drains its inboxes and runs
// commands); moving a queue is taken to carry the queue's load alone.
//
// The rule, after OVS's pmd-auto-lb: nothing moves unless the busiest
// thread's load is above the threshold. Then of every move of one queue off
// the busiest thread to another thread, the one that leaves the lowest
// busiest load over all threads is taken (ties: the lighter queue, then the
// first), if it lowers the busiest load by the margin (a share of that
// load) or more. The busiest load falls with each move taken, so the moves
// cannot go back and forth on steady load.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "dataplane/tunables.hpp"

namespace xdpvhost::dataplane {

struct RebalancePolicy {
  double threshold = 0.9;  // the busiest thread's load above which a move is looked for
  double margin = 0.25;    // the share of the busiest load a move must take off it

  static RebalancePolicy of(const Tunables& t) noexcept {
    return {t.rebalance_threshold_pct / 100.0, t.rebalance_margin_pct / 100.0};
  }
};

// One movable queue (a guest port's queue group or an uplink's NIC queue).
struct QueueLoad {
  std::uint16_t thread = 0;  // where it runs
  double load = 0;
};

struct PlannedMove {
  std::size_t queue = 0;  // index into the queues given
  std::uint16_t from = 0, to = 0;
  double busiest_before = 0;  // the busiest thread's load, measured
  double busiest_after = 0;   // and expected after the move
};

// `threads[t]` is thread t's load; every queue's thread is below
// threads.size().
std::optional<PlannedMove> plan_move(std::span<const double> threads,
                                     std::span<const QueueLoad> queues,
                                     const RebalancePolicy& policy) noexcept;

}  // namespace xdpvhost::dataplane
