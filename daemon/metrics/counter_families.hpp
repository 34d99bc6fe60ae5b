#pragma once
// Prometheus families made from a counter table (dataplane/counters.hpp):
// one family per distinct family name, in table order, with one series per
// row of values and per table entry of that family. A row carries its own
// labels (port, or uplink and queue, or thread); an entry adds its constant
// label (direction="rx", result="work", ...).

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/counters.hpp"
#include "family_builder.hpp"

namespace xdpvhost::daemon::metrics {

template <std::size_t N>
struct CounterRow {
  std::vector<Label> labels;  // views into strings that outlive the call
  dataplane::CounterValues<N> values{};
};

template <class Set, std::size_t N>
void add_counter_families(Families& out, std::string_view prefix,
                          const std::array<dataplane::CounterField<Set>, N>& table,
                          const std::vector<CounterRow<N>>& rows,
                          dataplane::PortScope scope = dataplane::PortScope::kGuest) {
  for (std::size_t first = 0; first < N;) {
    std::size_t end = first + 1;
    while (end < N && table[end].info.family == table[first].info.family) ++end;
    const bool in_scope =
        table[first].scope == dataplane::PortScope::kAll || scope == dataplane::PortScope::kGuest;
    if (in_scope) {
      auto f = make_family(std::string(prefix) + std::string(table[first].info.family),
                           prometheus::MetricType::Counter, table[first].info.help);
      for (const auto& row : rows)
        for (std::size_t i = first; i < end; ++i) {
          std::vector<Label> labels = row.labels;
          if (!table[i].info.label.empty())
            labels.emplace_back(table[i].info.label, table[i].info.value);
          add_sample(f, LabelSpan(labels), row.values[i]);
        }
      out.push_back(std::move(f));
    }
    first = end;
  }
}

// The drops_total family of a port kind: one series per row and reason.
template <std::size_t N>
void add_drop_family(Families& out, std::string_view prefix,
                     const std::vector<std::vector<Label>>& labels,
                     const std::vector<dataplane::CounterValues<N>>& drops) {
  auto f = make_family(
      std::string(prefix) + std::string(dataplane::kPortDrops.family),
      prometheus::MetricType::Counter,
      std::string(dataplane::kPortDrops.help) + " Every reason is listed, zero or not.");
  for (std::size_t r = 0; r < labels.size(); ++r)
    for (std::size_t i = 0; i < N; ++i) {
      std::vector<Label> l = labels[r];
      l.emplace_back(dataplane::kPortDrops.label,
                     dataplane::to_string(static_cast<dataplane::DropReason>(i)));
      add_sample(f, LabelSpan(l), drops[r][i]);
    }
  out.push_back(std::move(f));
}

}  // namespace xdpvhost::daemon::metrics
