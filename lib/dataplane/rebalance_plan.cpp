#include "dataplane/rebalance_plan.hpp"

#include <algorithm>

namespace xdpvhost::dataplane {

std::vector<QueueLoad> queue_loads(std::span<const std::uint64_t> thread_busy_ns,
                                   std::span<const QueueSample> queues, double span_ns) {
  // Per thread: the busy time its queues' polls do not account for, and the
  // frames put into its queues.
  std::vector<std::uint64_t> rest(thread_busy_ns.begin(), thread_busy_ns.end());
  std::vector<std::uint64_t> frames(thread_busy_ns.size(), 0);
  for (const auto& q : queues) {
    rest[q.thread] -= std::min(rest[q.thread], q.busy_ns);
    frames[q.thread] += q.frames_in;
  }
  std::vector<QueueLoad> loads;
  loads.reserve(queues.size());
  for (const auto& q : queues) {
    double ns = static_cast<double>(q.busy_ns);
    if (frames[q.thread] != 0)
      ns += static_cast<double>(rest[q.thread]) * static_cast<double>(q.frames_in) /
            static_cast<double>(frames[q.thread]);
    loads.push_back(QueueLoad{q.thread, span_ns > 0 ? ns / span_ns : 0.0});
  }
  return loads;
}

std::optional<PlannedMove> plan_move(std::span<const double> threads,
                                     std::span<const QueueLoad> queues,
                                     const RebalancePolicy& policy) noexcept {
  if (threads.size() < 2) return std::nullopt;
  const std::size_t n = threads.size();  // threads are indexed by std::uint16_t
  const auto from = static_cast<std::uint16_t>(std::max_element(threads.begin(), threads.end()) -
                                               threads.begin());
  const double before = threads[from];
  if (before <= 0 || before <= policy.threshold) return std::nullopt;

  std::optional<PlannedMove> best;
  double best_load = 0;
  for (std::size_t q = 0; q < queues.size(); ++q) {
    if (queues[q].thread != from || queues[q].load <= 0) continue;
    for (std::size_t to = 0; to < n; ++to) {
      if (to == from) continue;
      // The busiest load over all threads after the move.
      double after = std::max(before - queues[q].load, threads[to] + queues[q].load);
      for (std::size_t t = 0; t < n; ++t)
        if (t != from && t != to) after = std::max(after, threads[t]);
      const bool better = !best || after < best->busiest_after ||
                          (after == best->busiest_after && queues[q].load < best_load);
      if (better) {
        best = PlannedMove{q, from, static_cast<std::uint16_t>(to), before, after};
        best_load = queues[q].load;
      }
    }
  }
  if (!best || before - best->busiest_after < policy.margin * before ||
      best->busiest_after >= before)
    return std::nullopt;
  return best;
}

}  // namespace xdpvhost::dataplane
