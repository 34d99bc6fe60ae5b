#pragma once
// Which one queue to move between service threads, from their measured
// load: the rebalancer's decision (controller/rebalancer.hpp measures and
// moves; this only decides, so that it can be checked line by line).
//
// A load is a share of one core over the measured interval. A thread's is
// the time it spent in poll rounds that moved frames (ThreadCounters::
// busy_ns). A queue's (queue_loads) is the time its own polls took
// (PortCounters::busy_ns: taking its frames and forwarding them, delivering
// to queues of the same thread included) plus its share, by the frames put
// into it (tx_packets), of the rest of its thread's busy time: mostly
// delivering the frames that came through the mailboxes from other threads,
// which is what a queue that only receives costs its thread. Moving a queue
// is taken to carry its load.
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
#include <vector>

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

// What one queue did over the interval.
struct QueueSample {
  std::uint16_t thread = 0;
  std::uint64_t busy_ns = 0;    // its polls (PortCounters::busy_ns)
  std::uint64_t frames_in = 0;  // frames put into it (PortCounters::tx_packets)
};

// Each queue's load over `span_ns`; `thread_busy_ns[t]` is thread t's busy
// time, and every sample's thread is below its size.
std::vector<QueueLoad> queue_loads(std::span<const std::uint64_t> thread_busy_ns,
                                   std::span<const QueueSample> queues, double span_ns);

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
