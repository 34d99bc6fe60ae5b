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

// Breakdowns of a port's or queue's counts (by reason, by queue pair) list a
// series once it has counted, so that an idle port costs few series
// (docs/operating.md, series budget); kAll lists every one, zero or not
// (config metrics.zero_breakdowns).
enum class Breakdowns : bool { kCounted, kAll };

template <std::size_t N>
struct CounterRow {
  std::vector<Label> labels;  // views into strings that outlive the call
  dataplane::CounterValues<N> values{};
};

// With Breakdowns::kCounted a zero value has no series (the queue-pair
// families); the port's own totals keep kAll.
template <class Set, std::size_t N>
void add_counter_families(Families& out, std::string_view prefix,
                          const std::array<dataplane::CounterField<Set>, N>& table,
                          const std::vector<CounterRow<N>>& rows,
                          dataplane::PortScope scope = dataplane::PortScope::kGuest,
                          Breakdowns listed = Breakdowns::kAll) {
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
          if (listed == Breakdowns::kCounted && row.values[i] == 0) continue;
          std::vector<Label> labels = row.labels;
          if (!table[i].info.label.empty())
            labels.emplace_back(table[i].info.label, table[i].info.value);
          if (table[i].info.scale == 1.0)
            add_sample(f, LabelSpan(labels), row.values[i]);
          else
            add_sample(f, LabelSpan(labels),
                       static_cast<double>(row.values[i]) * table[i].info.scale);
        }
      out.push_back(std::move(f));
    }
    first = end;
  }
}

// A per-reason family (`info`: family, HELP, label): one series per row and
// reason `i` in [first, N), named by reason_name(i); with
// Breakdowns::kCounted only the reasons that counted.
template <std::size_t N, class ReasonName>
void add_reason_family(Families& out, std::string_view prefix, const dataplane::CounterInfo& info,
                       const std::vector<std::vector<Label>>& rows,
                       const std::vector<dataplane::CounterValues<N>>& values, std::size_t first,
                       ReasonName&& reason_name, Breakdowns listed) {
  auto f =
      make_family(std::string(prefix) + std::string(info.family), prometheus::MetricType::Counter,
                  std::string(info.help) + (listed == Breakdowns::kAll
                                                ? " Every reason is listed, zero or not."
                                                : " A reason has a series once it has counted."));
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t i = first; i < N; ++i) {
      if (listed == Breakdowns::kCounted && values[r][i] == 0) continue;
      std::vector<Label> l = rows[r];
      l.emplace_back(info.label, reason_name(i));
      add_sample(f, LabelSpan(l), values[r][i]);
    }
  out.push_back(std::move(f));
}

// The drops_total family of a port kind: one series per row and reason.
template <std::size_t N>
void add_drop_family(Families& out, std::string_view prefix,
                     const std::vector<std::vector<Label>>& labels,
                     const std::vector<dataplane::CounterValues<N>>& drops, Breakdowns listed) {
  add_reason_family(
      out, prefix, dataplane::kPortDrops, labels, drops, 0,
      [](std::size_t i) { return dataplane::to_string(static_cast<dataplane::DropReason>(i)); },
      listed);
}

}  // namespace xdpvhost::daemon::metrics
