#pragma once
// Writes the Prometheus text exposition format, version 0.0.4: per metric
// family one "# HELP" and one "# TYPE" line, then its samples, each
//   name{label="value",...} value
// Label values and help texts are escaped as the format requires. The
// caller writes every sample of a family right after its family() call.

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xdpvhost::daemon::metrics {

using Label = std::pair<std::string_view, std::string_view>;
using Labels = std::initializer_list<Label>;

enum class MetricType { kCounter, kGauge, kHistogram, kUntyped };

class PrometheusText {
 public:
  // Starts a family. `name` is the full metric name (counters end in _total).
  void family(std::string_view name, MetricType type, std::string_view help);
  void sample(std::string_view name, Labels labels, std::uint64_t value);
  void sample(std::string_view name, Labels labels, double value);
  // A histogram sample set: `name`_bucket{...,le="bound"} cumulative counts
  // for each finite upper bound in `bounds` and +Inf (`counts` has one more
  // entry than `bounds`: per bucket, not cumulative), then _sum and _count
  // (_count equals the +Inf bucket).
  void histogram(std::string_view name, Labels labels, std::span<const std::uint64_t> bounds,
                 std::span<const std::uint64_t> counts, std::uint64_t sum);

  const std::string& text() const noexcept { return out_; }
  std::string take() { return std::move(out_); }

 private:
  void labels(Labels labels, std::string_view extra_name = {}, std::string_view extra_value = {});
  std::string out_;
};

// Label value escaping: backslash, double quote and newline.
std::string escape_label_value(std::string_view value);
// HELP text escaping: backslash and newline.
std::string escape_help(std::string_view help);
// A sample value as the format spells it: integers exactly, +Inf, -Inf, NaN.
std::string format_value(double value);

}  // namespace xdpvhost::daemon::metrics
