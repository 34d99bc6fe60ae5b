#include "stats_view.hpp"

#include <string>
#include <utility>

#include "dataplane/counters.hpp"
#include "text_table.hpp"

namespace xdpvhost::ctl {

using nlohmann::json;

namespace {

std::uint64_t count(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() > 0)
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  return 0;
}

std::uint64_t number(const json& object, std::string_view key) {
  if (!object.is_object()) return 0;
  const auto it = object.find(std::string(key));
  return it == object.end() ? 0 : count(*it);
}

std::uint64_t drop_total(const json& object) {
  std::uint64_t total = 0;
  if (object.is_object() && object.contains("drops") && object["drops"].is_object())
    for (const auto& [reason, n] : object["drops"].items()) total += count(n);
  return total;
}

std::string drop_detail(const json& object) {
  std::string s;
  if (object.is_object() && object.contains("drops") && object["drops"].is_object())
    for (const auto& [reason, n] : object["drops"].items())
      if (count(n) != 0) s += (s.empty() ? "" : ", ") + reason + "=" + std::to_string(count(n));
  return s;
}

// Rate of `key` between the same object in two samples; "" without a previous one.
std::string rate(const json& now, const json& before, const char* key, double seconds) {
  if (before.is_null() || seconds <= 0) return "";
  const std::uint64_t a = number(before, key), b = number(now, key);
  return format_rate(b >= a ? static_cast<double>(b - a) / seconds : 0.0);
}

const json& member(const json& object, const std::string& key) {
  static const json null;
  if (!object.is_object() || !object.contains(key)) return null;
  return object[key];
}

// The columns a counter table gives a stats table: its entries that have a
// column, in table order (the table says which counters the CLI shows).
struct Column {
  std::string_view header;
  std::string_view key;  // JSON name
};

template <class Set, std::size_t N>
void add_columns(std::vector<Column>& out, const std::array<dataplane::CounterField<Set>, N>& table,
                 dataplane::PortScope scope = dataplane::PortScope::kGuest) {
  for (const auto& e : table)
    if (!e.info.column.empty() &&
        (e.scope == dataplane::PortScope::kAll || scope == dataplane::PortScope::kGuest))
      out.push_back({e.info.column, e.info.name});
}

// `names` name the row (left-aligned except a numeric second one), then the
// counter columns, then `extra` columns.
TextTable table_of(std::vector<std::string> names, const std::vector<Column>& columns,
                   const std::vector<std::string>& extra = {}) {
  std::vector<bool> right(names.size(), true);
  right[0] = false;
  std::vector<std::string> header = std::move(names);
  for (const auto& c : columns) header.emplace_back(c.header);
  header.insert(header.end(), extra.begin(), extra.end());
  right.resize(header.size(), true);
  return TextTable(std::move(header), std::move(right));
}

void print_ports(const json& ports, const json& previous, double seconds, std::ostream& out) {
  const bool rates = !previous.is_null() && seconds > 0;
  std::vector<Column> columns;
  add_columns(columns, dataplane::kPortCounters);
  std::vector<std::string> extra{std::string(dataplane::kPortDrops.column)};
  if (rates) extra.insert(extra.end(), {"RX PPS", "TX PPS"});
  TextTable t = table_of({"PORT"}, columns, extra);
  std::vector<std::pair<std::string, std::string>> details;  // port, drops by reason
  for (const auto& [name, p] : ports.items()) {
    std::vector<std::string> row{name};
    for (const auto& c : columns) row.push_back(std::to_string(number(p, c.key)));
    row.push_back(std::to_string(drop_total(p)));
    if (rates) {
      const json& before = member(member(previous, "ports"), name);
      row.push_back(rate(p, before, "rx_packets", seconds));
      row.push_back(rate(p, before, "tx_packets", seconds));
    }
    t.add(std::move(row));
    if (std::string d = drop_detail(p); !d.empty()) details.emplace_back(name, std::move(d));
  }
  if (t.empty()) {
    out << "no ports\n";
    return;
  }
  t.print(out);
  if (!details.empty()) {
    out << "drops by reason:\n";
    for (const auto& [name, d] : details) out << "  " << name << ": " << d << '\n';
  }
}

void print_uplinks(const json& uplinks, std::ostream& out) {
  std::vector<Column> columns;
  add_columns(columns, dataplane::kPortCounters, dataplane::PortScope::kAll);
  add_columns(columns, dataplane::kUplinkQueueCounters);
  TextTable t = table_of({"UPLINK", "QUEUE"}, columns);
  std::vector<std::pair<std::string, std::string>> details;  // uplink, drops by reason
  for (const auto& [name, u] : uplinks.items()) {
    if (!u.is_object()) continue;
    for (const auto& q : u.value("queues", json::array())) {
      std::vector<std::string> row{name, std::to_string(number(q, "queue"))};
      for (const auto& c : columns) row.push_back(std::to_string(number(q, c.key)));
      t.add(std::move(row));
    }
    if (std::string d = drop_detail(u); !d.empty()) details.emplace_back(name, std::move(d));
  }
  if (t.empty()) return;
  out << '\n';
  t.print(out);
  if (!details.empty()) {
    out << "uplink drops by reason:\n";
    for (const auto& [name, d] : details) out << "  " << name << ": " << d << '\n';
  }
}

void print_threads(const json& threads, std::ostream& out) {
  std::vector<Column> columns;
  add_columns(columns, dataplane::kThreadCounters);
  TextTable t = table_of({"THREAD"}, columns, {"BURSTS"});
  for (const auto& th : threads) {
    std::uint64_t bursts = 0;
    if (th.contains("burst_histogram") && th["burst_histogram"].is_object())
      for (const auto& [le, n] : th["burst_histogram"].items()) bursts += count(n);
    std::vector<std::string> row{std::to_string(number(th, "index"))};
    for (const auto& c : columns) row.push_back(std::to_string(number(th, c.key)));
    row.push_back(std::to_string(bursts));
    t.add(std::move(row));
  }
  if (t.empty()) return;
  out << '\n';
  t.print(out);
}

}  // namespace

void print_stats(const json& stats, const json& previous, double seconds, std::ostream& out) {
  if (!stats.is_object()) {
    out << stats.dump(2) << '\n';
    return;
  }
  print_ports(stats.value("ports", json::object()), previous, seconds, out);
  print_uplinks(stats.value("uplinks", json::object()), out);
  print_threads(stats.value("threads", json::array()), out);
}

void print_stats_reset(const json& reset, std::ostream& out) {
  if (!reset.is_object()) {
    out << reset.dump(2) << '\n';
    return;
  }
  auto list = [](const json& a) {
    std::string s;
    if (a.is_array())
      for (const auto& e : a)
        s += (s.empty() ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
    return s.empty() ? std::string("none") : s;
  };
  out << "reset ports: " << list(reset.value("ports", json::array()))
      << "; uplinks: " << list(reset.value("uplinks", json::array()))
      << "; threads: " << (reset.value("threads", false) ? "yes" : "no") << '\n';
}

}  // namespace xdpvhost::ctl
