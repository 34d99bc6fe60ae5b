#include "stats_view.hpp"

#include <string>
#include <utility>

#include "text_table.hpp"

namespace xdpvhost::daemon::ctl {

using nlohmann::json;

namespace {

std::uint64_t count(const json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer() && v.get<std::int64_t>() > 0)
    return static_cast<std::uint64_t>(v.get<std::int64_t>());
  return 0;
}

std::uint64_t number(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) return 0;
  return count(object[key]);
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

void print_ports(const json& ports, const json& previous, double seconds, std::ostream& out) {
  const bool rates = !previous.is_null() && seconds > 0;
  std::vector<std::string> header{"PORT",  "RX PKTS", "RX BYTES", "TX PKTS",        "TX BYTES",
                                  "DROPS", "KICKS",   "IRQS",     "IRQS SUPPRESSED"};
  if (rates) header.insert(header.end(), {"RX PPS", "TX PPS"});
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  TextTable t(header, right);
  std::vector<std::pair<std::string, std::string>> details;  // port, drops by reason
  for (const auto& [name, p] : ports.items()) {
    std::vector<std::string> row{name,
                                 std::to_string(number(p, "rx_packets")),
                                 std::to_string(number(p, "rx_bytes")),
                                 std::to_string(number(p, "tx_packets")),
                                 std::to_string(number(p, "tx_bytes")),
                                 std::to_string(drop_total(p)),
                                 std::to_string(number(p, "kicks")),
                                 std::to_string(number(p, "interrupts")),
                                 std::to_string(number(p, "interrupts_suppressed"))};
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
  TextTable t({"UPLINK", "QUEUE", "RX PKTS", "RX BYTES", "TX PKTS", "TX BYTES", "RX DROPPED",
               "RX RING FULL", "FILL EMPTY", "TX RING EMPTY", "INVALID DESCS"},
              {false, true, true, true, true, true, true, true, true, true, true});
  std::vector<std::pair<std::string, std::string>> details;  // uplink, drops by reason
  for (const auto& [name, u] : uplinks.items()) {
    if (!u.is_object()) continue;
    for (const auto& q : u.value("queues", json::array()))
      t.add({name, std::to_string(number(q, "queue")), std::to_string(number(q, "rx_packets")),
             std::to_string(number(q, "rx_bytes")), std::to_string(number(q, "tx_packets")),
             std::to_string(number(q, "tx_bytes")), std::to_string(number(q, "rx_dropped")),
             std::to_string(number(q, "rx_ring_full")),
             std::to_string(number(q, "rx_fill_ring_empty_descs")),
             std::to_string(number(q, "tx_ring_empty_descs")),
             std::to_string(number(q, "rx_invalid_descs") + number(q, "tx_invalid_descs"))});
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
  TextTable t({"THREAD", "BUSY ITERATIONS", "EMPTY ITERATIONS", "SLEEPS", "WAKEUPS", "BURSTS"},
              {true, true, true, true, true, true});
  for (const auto& th : threads) {
    std::uint64_t bursts = 0;
    if (th.contains("burst_histogram") && th["burst_histogram"].is_object())
      for (const auto& [le, n] : th["burst_histogram"].items()) bursts += count(n);
    t.add({std::to_string(number(th, "index")), std::to_string(number(th, "busy_iterations")),
           std::to_string(number(th, "empty_iterations")), std::to_string(number(th, "sleeps")),
           std::to_string(number(th, "wakeups")), std::to_string(bursts)});
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

}  // namespace xdpvhost::daemon::ctl
