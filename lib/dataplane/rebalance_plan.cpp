#include "dataplane/rebalance_plan.hpp"

#include <algorithm>

namespace xdpvhost::dataplane {

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
