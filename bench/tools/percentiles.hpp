#pragma once
// Nearest-rank percentiles of a sample (sorted in place).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace xdpvhost::bench {

inline double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

}  // namespace xdpvhost::bench
