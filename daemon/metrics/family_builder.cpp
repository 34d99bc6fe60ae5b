#include "family_builder.hpp"

#include <cassert>
#include <limits>

namespace xdpvhost::daemon::metrics {

namespace {

prometheus::ClientMetric series(LabelSpan labels) {
  prometheus::ClientMetric m;
  m.label.reserve(labels.size());
  for (const auto& [name, value] : labels)
    m.label.push_back({std::string(name), std::string(value)});
  return m;
}

}  // namespace

std::string escape_help(std::string_view help) {
  std::string s;
  s.reserve(help.size());
  for (char c : help) {
    if (c == '\\')
      s += "\\\\";
    else if (c == '\n')
      s += "\\n";
    else
      s += c;
  }
  return s;
}

prometheus::MetricFamily make_family(std::string name, prometheus::MetricType type,
                                     std::string_view help) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = escape_help(help);
  f.type = type;
  return f;
}

void add_sample(prometheus::MetricFamily& family, Labels labels, double value) {
  add_sample(family, LabelSpan(labels.begin(), labels.size()), value);
}

void add_sample(prometheus::MetricFamily& family, LabelSpan labels, double value) {
  auto m = series(labels);
  switch (family.type) {
    case prometheus::MetricType::Counter:
      m.counter.value = value;
      break;
    case prometheus::MetricType::Gauge:
      m.gauge.value = value;
      break;
    case prometheus::MetricType::Untyped:
      m.untyped.value = value;
      break;
    case prometheus::MetricType::Summary:
    case prometheus::MetricType::Histogram:
      assert(!"add_sample on a summary or histogram family");
      return;
  }
  family.metric.push_back(std::move(m));
}

void add_sample(prometheus::MetricFamily& family, Labels labels, std::uint64_t value) {
  add_sample(family, labels, static_cast<double>(value));
}

void add_sample(prometheus::MetricFamily& family, LabelSpan labels, std::uint64_t value) {
  add_sample(family, labels, static_cast<double>(value));
}

void add_info(prometheus::MetricFamily& family, Labels labels) {
  add_sample(family, labels, 1.0);
}

void add_info(prometheus::MetricFamily& family, LabelSpan labels) {
  add_sample(family, labels, 1.0);
}

void add_histogram(prometheus::MetricFamily& family, Labels labels,
                   std::span<const std::uint64_t> bounds, std::span<const std::uint64_t> counts,
                   std::uint64_t sum) {
  assert(family.type == prometheus::MetricType::Histogram);
  auto m = series(LabelSpan(labels.begin(), labels.size()));
  std::uint64_t cumulative = 0;
  m.histogram.bucket.reserve(bounds.size() + 1);
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (i < counts.size()) cumulative += counts[i];
    m.histogram.bucket.push_back({cumulative, static_cast<double>(bounds[i])});
  }
  for (std::size_t i = bounds.size(); i < counts.size(); ++i) cumulative += counts[i];
  m.histogram.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
  m.histogram.sample_count = cumulative;
  m.histogram.sample_sum = static_cast<double>(sum);
  family.metric.push_back(std::move(m));
}

}  // namespace xdpvhost::daemon::metrics
