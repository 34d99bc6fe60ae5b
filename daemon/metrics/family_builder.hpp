#pragma once
// Builds prometheus-cpp's data model -- a prometheus::MetricFamily per
// metric, holding a prometheus::ClientMetric per series -- for
// prometheus::TextSerializer to write as the text format 0.0.4. What
// prometheus-cpp 1.0 leaves to its caller is done here:
// - the HELP text is escaped (backslash, newline) as the format requires:
//   TextSerializer writes it verbatim (label values it escapes itself);
// - a histogram comes as per-bucket counts (the datapath's burst histogram)
//   and is made cumulative, with the +Inf bucket and the sample count both
//   the total, so _count always equals the +Inf bucket.
// Sample values are doubles in prometheus-cpp (as in Prometheus itself):
// counters are exact up to 2^53; TextSerializer writes 16 significant
// digits, so integers below 10^16 appear exactly as integers.

#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

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
using LabelSpan = std::span<const Label>;
using Families = std::vector<prometheus::MetricFamily>;

// A family without series yet. `name` is the full metric name (counters end
// in _total: prometheus-cpp 1.0 adds no suffix).
prometheus::MetricFamily make_family(std::string name, prometheus::MetricType type,
                                     std::string_view help);

// A series of a counter, gauge or untyped family; its value lands in the
// field the family's type selects.
void add_sample(prometheus::MetricFamily& family, Labels labels, double value);
void add_sample(prometheus::MetricFamily& family, Labels labels, std::uint64_t value);
// The same with labels assembled at run time.
void add_sample(prometheus::MetricFamily& family, LabelSpan labels, double value);
void add_sample(prometheus::MetricFamily& family, LabelSpan labels, std::uint64_t value);
// An info-style series: the labels carry the information, the value is 1.
void add_info(prometheus::MetricFamily& family, Labels labels);
void add_info(prometheus::MetricFamily& family, LabelSpan labels);

// A series of a histogram family: `bounds` are the finite upper bounds in
// increasing order, `counts` the per-bucket (not cumulative) counts, one
// more than `bounds` (the last counts what lies above every bound; missing
// entries count 0), `sum` the sum of the observed values.
void add_histogram(prometheus::MetricFamily& family, Labels labels,
                   std::span<const std::uint64_t> bounds, std::span<const std::uint64_t> counts,
                   std::uint64_t sum);

// HELP text escaping: backslash and newline.
std::string escape_help(std::string_view help);

}  // namespace xdpvhost::daemon::metrics
