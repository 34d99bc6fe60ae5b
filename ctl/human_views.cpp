#include "human_views.hpp"

#include <algorithm>
#include <cstdio>
#include <initializer_list>

#include "text_table.hpp"

namespace xdpvhost::ctl {

using nlohmann::json;

namespace {

std::string text(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "yes" : "no";
  if (v.is_array()) {
    std::string s;
    for (const auto& e : v) {
      if (!s.empty()) s += ',';
      s += text(e);
    }
    return s.empty() ? "-" : s;
  }
  return v.dump();
}

const json& array_or_empty(const json& object, const char* key) {
  static const json empty = json::array();
  if (!object.is_object() || !object.contains(key) || !object[key].is_array()) return empty;
  return object[key];
}

std::string uptime(double seconds) {
  const auto s = static_cast<long long>(seconds);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%lldd %02lld:%02lld:%02lld", s / 86400, s / 3600 % 24,
                s / 60 % 60, s % 60);
  return buf;
}

std::string bytes(const json& v) {
  if (!v.is_number_unsigned()) return "-";
  double n = v.get<double>();
  const char* unit = "B";
  for (const char* next : {"KiB", "MiB", "GiB", "TiB"}) {
    if (n < 1024) break;
    n /= 1024;
    unit = next;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit[0] == 'B' ? "%.0f %s" : "%.1f %s", n, unit);
  return buf;
}

// "kind n, kind n" for the non-zero members of `counts`, but `skip`.
std::string non_zero(const json& counts, std::initializer_list<const char*> skip) {
  std::string s;
  if (!counts.is_object()) return "-";
  for (const auto& [kind, n] : counts.items()) {
    if (std::find(skip.begin(), skip.end(), kind) != skip.end()) continue;
    const json& value = n.is_object() ? n["bytes"] : n;
    if (!value.is_number() || value.get<double>() == 0) continue;
    if (!s.empty()) s += ", ";
    s += kind + " " + (n.is_object() ? bytes(value) + " (" + text(n["count"]) + ")" : text(value));
  }
  return s.empty() ? "none" : s;
}

std::string bpf_list(const json& objects) {
  std::string s;
  for (const auto& o : objects.is_array() ? objects : json::array()) {
    if (!s.empty()) s += ", ";
    s += text(o["id"]) + " (" + text(o["type"]) + ")";
  }
  return s.empty() ? "none" : s;
}

void print_resources(const json& r, std::ostream& out) {
  if (!r.is_object()) return;
  TextTable t({"RESOURCE", "NOW"});
  const json& fds = r["fds"];
  t.add({"fds", cell(fds, "total") + " of " + cell(fds, "limit") + ": " +
                    non_zero(fds, {"total", "limit"})});
  t.add({"mapped", non_zero(r["mapped"], {})});
  t.add({"threads", cell(r, "threads")});
  t.add({"rss", bytes(r["rss_bytes"])});
  if (r.contains("heap") && r["heap"].is_object())
    t.add({"heap", bytes(r["heap"]["in_use_bytes"]) + " in use, " + bytes(r["heap"]["free_bytes"]) +
                       " free"});
  t.add({"bpf programs", bpf_list(r["bpf_programs"])});
  t.add({"bpf maps", bpf_list(r["bpf_maps"])});
  t.print(out);
}

}  // namespace

std::string cell(const json& object, const char* key) {
  if (!object.is_object() || !object.contains(key)) return "-";
  return text(object[key]);
}

namespace {

// Whom a port serves, as the orchestrator named it: "namespace/vm", or "-".
std::string owner_cell(const json& port) {
  if (!port.is_object() || !port.contains("owner") || !port["owner"].is_object()) return "-";
  const json& o = port["owner"];
  const std::string ns = o.value("namespace", std::string());
  const std::string vm = o.value("vm", std::string());
  if (ns.empty() && vm.empty()) return "-";
  return ns.empty() ? vm : ns + "/" + vm;
}

}  // namespace

void print_port_list(const json& ports, std::ostream& out) {
  TextTable t(
      {"NAME", "STATE", "MAC", "MODE", "QUEUES", "MTU", "THREAD", "UPLINK", "OWNER", "SOCKET"},
      {false, false, false, false, true, true, true, false, false, false});
  for (const auto& p : ports)
    t.add({cell(p, "name"), cell(p, "state"), cell(p, "mac"), cell(p, "mode"),
           cell(p, "queue_pairs"), cell(p, "mtu"), cell(p, "thread"), cell(p, "uplink"),
           owner_cell(p), cell(p, "socket")});
  if (t.empty())
    out << "no ports\n";
  else
    t.print(out);
}

void print_uplink_list(const json& uplinks, std::ostream& out) {
  if (uplinks.empty()) {
    out << "no uplinks\n";
    return;
  }
  TextTable t({"NAME", "INTERFACE", "LINK", "BIND", "QUEUE", "BOUND", "TX CHECKSUM", "NAPI ID",
               "THREAD", "NAPI BUSY POLL"},
              {false, false, false, false, true, false, false, true, true, false});
  for (const auto& u : uplinks) {
    const auto& queues = array_or_empty(u, "queues");
    if (queues.empty())
      t.add({cell(u, "name"), cell(u, "interface"), cell(u, "link"), cell(u, "bind")});
    for (const auto& q : queues) {
      std::string busy = "-";
      if (q.contains("napi_busy_poll") && q["napi_busy_poll"].is_object()) {
        const auto& n = q["napi_busy_poll"];
        busy = std::string(n.value("active", false) ? "active" : "inactive") + " (" +
               n.value("reason", std::string()) + ")";
      }
      // "copy, multi-buffer": frames longer than a UMEM frame travel as chains.
      std::string bound = cell(q, "bind_mode");
      if (q.value("multi_buffer", false)) bound += ", multi-buffer";
      t.add({cell(u, "name"), cell(u, "interface"), cell(u, "link"), cell(u, "bind"),
             cell(q, "queue"), bound, cell(q, "tx_checksum"), cell(q, "napi_id"), cell(q, "thread"),
             busy});
    }
  }
  t.print(out);
}

void print_status(const json& status, std::ostream& out) {
  out << "xdpvhostd " << cell(status, "version");
  if (status.contains("uptime_s") && status["uptime_s"].is_number())
    out << ", up " << uptime(status["uptime_s"].get<double>());
  out << '\n';
  if (const auto it = status.find("config"); it != status.end() && it->is_object()) {
    const json& c = *it;
    out << "config " << cell(c, "path") << (c.value("following", false) ? " (followed)" : "")
        << ", " << cell(c, "reloads") << " reload(s)";
    if (const auto& e = c.value("last_error", json()); e.is_string())
      out << "; newest version not loaded: " << e.get<std::string>();
    if (!array_or_empty(c, "restart_needed").empty())
      out << "; restart needed for " << cell(c, "restart_needed");
    out << '\n';
  }
  out << '\n';
  // LOAD: what the rebalancer measured at its last look (percent of a core).
  const json rebalance = status.value("rebalance", json::object());
  const json loads = rebalance.value("thread_load_pct", json::array());
  TextTable threads({"THREAD", "CPU", "STATE", "LOAD %", "BUSY POLL US", "PORTS", "UPLINKS"},
                    {true, true, false, true, true, false, false});
  for (const auto& t : array_or_empty(status, "threads")) {
    const auto i = t.value("index", std::size_t{0});
    threads.add({cell(t, "index"), cell(t, "cpu"), cell(t, "state"),
                 i < loads.size() ? text(loads[i]) : "-", cell(t, "busy_poll_us"), cell(t, "ports"),
                 cell(t, "uplinks")});
  }
  threads.print(out);
  if (!rebalance.empty()) {
    out << "rebalance " << cell(rebalance, "mode");
    if (rebalance.value("mode", std::string()) == "auto")
      out << " every " << cell(rebalance, "interval_s") << " s";
    const json moves = rebalance.value("moves", json::object());
    out << ": " << moves.value("moved", 0) << " queue(s) moved";
    if (const auto& m = rebalance.value("last_move", json()); m.is_object())
      out << "; last " << cell(m, "queue") << " from thread " << cell(m, "from") << " to "
          << cell(m, "to") << " (" << cell(m, "outcome") << ", thread " << cell(m, "from") << " at "
          << cell(m, "busiest_pct") << " %), " << uptime(m.value("ago_s", 0.0)) << " ago";
    out << '\n';
  }
  out << '\n';
  print_port_list(array_or_empty(status, "ports"), out);
  out << '\n';
  print_uplink_list(array_or_empty(status, "uplinks"), out);
  if (status.contains("resources")) {
    out << '\n';
    print_resources(status["resources"], out);
  }
}

void print_port_detail(const json& port, std::ostream& out) {
  TextTable kv({"FIELD", "VALUE"});
  for (const char* key :
       {"name", "state", "socket", "mode", "mac", "mac_source", "mac_policy", "uplink",
        "queue_pairs", "mtu", "thread", "features", "protocol_features"})
    if (port.contains(key)) kv.add({key, cell(port, key)});
  for (const char* group : {"tunables", "frontend"})
    if (port.contains(group) && port[group].is_object())
      for (const auto& [k, v] : port[group].items())
        kv.add({std::string(group) + "." + k, text(v)});
  kv.print(out);
  const auto& queues = array_or_empty(port, "queues");
  out << '\n';
  if (queues.empty()) {
    out << "no virtqueues set up\n";
    return;
  }
  TextTable q({"VRING", "DIRECTION", "STATE", "SIZE", "ERROR"}, {true, false, false, true, false});
  for (const auto& v : queues)
    q.add({cell(v, "index"), cell(v, "direction"), cell(v, "state"), cell(v, "size"),
           v.contains("error") ? cell(v, "error") : ""});
  q.print(out);
}

void print_tunables(const json& scope, std::ostream& out) {
  out << "scope: " << cell(scope, "scope");
  if (scope.contains("name")) out << " " << cell(scope, "name");
  out << '\n';
  TextTable t({"TUNABLE", "VALUE", "SOURCE"});
  const json overrides = scope.value("overrides", json::object());
  if (scope.contains("tunables") && scope["tunables"].is_object())
    for (const auto& [k, v] : scope["tunables"].items())
      t.add({k, text(v), overrides.is_object() && overrides.contains(k) ? "override" : "global"});
  t.print(out);
}

void print_version(const std::string& client_version, const json& version, std::ostream& out) {
  out << "xdpvhostctl " << client_version << "\n";
  out << "xdpvhostd   " << cell(version, "version") << " (protocol " << cell(version, "protocol")
      << ")\n";
}

}  // namespace xdpvhost::ctl
