#include "prometheus_text.hpp"

#include <cmath>
#include <cstdio>

namespace xdpvhost::daemon::metrics {

namespace {

const char* type_name(MetricType type) {
  switch (type) {
    case MetricType::kCounter: return "counter";
    case MetricType::kGauge: return "gauge";
    case MetricType::kHistogram: return "histogram";
    case MetricType::kUntyped: return "untyped";
  }
  return "untyped";
}

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string s;
  s.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      s += "\\\\";
    else if (c == '"')
      s += "\\\"";
    else if (c == '\n')
      s += "\\n";
    else
      s += c;
  }
  return s;
}

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

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buf[40];
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else
    std::snprintf(buf, sizeof buf, "%.17g", value);
  return buf;
}

void PrometheusText::family(std::string_view name, MetricType type, std::string_view help) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += escape_help(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type_name(type);
  out_ += '\n';
}

void PrometheusText::labels(Labels labels, std::string_view extra_name,
                            std::string_view extra_value) {
  if (labels.size() == 0 && extra_name.empty()) return;
  out_ += '{';
  bool first = true;
  auto add = [&](std::string_view name, std::string_view value) {
    if (!first) out_ += ',';
    first = false;
    out_ += name;
    out_ += "=\"";
    out_ += escape_label_value(value);
    out_ += '"';
  };
  for (const auto& [name, value] : labels) add(name, value);
  if (!extra_name.empty()) add(extra_name, extra_value);
  out_ += '}';
}

void PrometheusText::sample(std::string_view name, Labels l, std::uint64_t value) {
  out_ += name;
  labels(l);
  out_ += ' ';
  out_ += std::to_string(value);
  out_ += '\n';
}

void PrometheusText::sample(std::string_view name, Labels l, double value) {
  out_ += name;
  labels(l);
  out_ += ' ';
  out_ += format_value(value);
  out_ += '\n';
}

void PrometheusText::histogram(std::string_view name, Labels l,
                               std::span<const std::uint64_t> bounds,
                               std::span<const std::uint64_t> counts, std::uint64_t sum) {
  std::uint64_t cumulative = 0;
  const std::string bucket = std::string(name) + "_bucket";
  auto line = [&](std::string_view le) {
    out_ += bucket;
    labels(l, "le", le);
    out_ += ' ';
    out_ += std::to_string(cumulative);
    out_ += '\n';
  };
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (i < counts.size()) cumulative += counts[i];
    line(std::to_string(bounds[i]));
  }
  for (std::size_t i = bounds.size(); i < counts.size(); ++i) cumulative += counts[i];
  line("+Inf");
  out_ += name;
  out_ += "_sum";
  labels(l);
  out_ += ' ';
  out_ += std::to_string(sum);
  out_ += "\n";
  out_ += name;
  out_ += "_count";
  labels(l);
  out_ += ' ';
  out_ += std::to_string(cumulative);
  out_ += '\n';
}

}  // namespace xdpvhost::daemon::metrics
