#include "uplink_lab.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/shell_command.hpp"

namespace xdpvhost::uplink_test {

using nlohmann::json;
using test_support::run_shell;

namespace {

// "xvu-", or XDPVHOST_TEST_NETNS_PREFIX: runs that share a machine (and may
// not see each other's pids) then neither collide nor clean up each other's
// namespaces as orphans.
std::string namespace_prefix() {
  const char* p = std::getenv("XDPVHOST_TEST_NETNS_PREFIX");
  return p != nullptr && *p != '\0' ? p : "xvu-";
}

std::uint64_t get_u64(const json& j, const char* a, const char* b) {
  if (!j.contains(a) || !j[a].contains(b)) return 0;
  return j[a][b].get<std::uint64_t>();
}

}  // namespace

UplinkLab::UplinkLab()
    : node_(test_support::namespace_name(namespace_prefix(), "node")),
      peer_(test_support::namespace_name(namespace_prefix(), "peer")) {}

bool UplinkLab::create_namespaces(std::string& error) {
  test_support::remove_orphaned_namespaces(namespace_prefix());
  return node_.create(error) && peer_.create(error);
}

namespace {

// A veth pair between the two namespaces, addressed and up.
bool create_pair(const std::string& node_ns, const std::string& peer_ns,
                 const UplinkLab::VethPair& v, int queues, std::string& error) {
  const std::string n = "ip -n " + node_ns + " ";
  const std::string p = "ip -n " + peer_ns + " ";
  const std::string q = queues > 1 ? " numrxqueues " + std::to_string(queues) + " numtxqueues " +
                                         std::to_string(queues)
                                   : "";
  const std::string script = "set -e; " + n + "link add " + v.node_if + " address " + v.node_mac +
                             q + " type veth peer name " + v.peer_if + " address " + v.peer_mac +
                             " netns " + peer_ns + "; " + n + "addr add " + v.node_ip + "/24 dev " +
                             v.node_if + "; " + p + "addr add " + v.peer_ip + "/24 dev " +
                             v.peer_if + "; " + "ip netns exec " + peer_ns + " ethtool -K " +
                             v.peer_if + " tx off >/dev/null; " + n + "link set " + v.node_if +
                             " up; " + p + "link set " + v.peer_if + " up";
  if (run_shell(script, &error) != 0) return false;
  error.clear();
  return true;
}

}  // namespace

bool UplinkLab::create_veth(std::string& error, int queues) {
  return create_pair(node_ns(), peer_ns(), kFirstLan, queues, error);
}

bool UplinkLab::create_second_veth(std::string& error) {
  return create_pair(node_ns(), peer_ns(), kSecondLan, 1, error);
}

bool UplinkLab::delete_veth(std::string* error) {
  return run_shell("ip -n " + node_ns() + " link del " + kNodeIf, error) == 0;
}

LinkCounters UplinkLab::link_counters(const std::string& ns, const char* ifname) const {
  std::string out;
  LinkCounters c;
  if (run_shell("ip -n " + ns + " -s -j link show " + ifname, &out) != 0) return c;
  const json j = json::parse(out, nullptr, false);
  if (!j.is_array() || j.empty() || !j[0].contains("stats64")) return c;
  const json& s = j[0]["stats64"];
  c.rx_packets = get_u64(s, "rx", "packets");
  c.rx_bytes = get_u64(s, "rx", "bytes");
  c.rx_dropped = get_u64(s, "rx", "dropped");
  c.tx_packets = get_u64(s, "tx", "packets");
  c.tx_bytes = get_u64(s, "tx", "bytes");
  c.tx_dropped = get_u64(s, "tx", "dropped");
  return c;
}

LinkCounters UplinkLab::node_link() const {
  return link_counters(node_ns(), kNodeIf);
}
LinkCounters UplinkLab::peer_link() const {
  return link_counters(peer_ns(), kPeerIf);
}

SnmpCounters UplinkLab::peer_snmp() const {
  return snmp(peer_fd());
}
SnmpCounters UplinkLab::node_snmp() const {
  return snmp(node_fd());
}

SnmpCounters UplinkLab::snmp(int ns_fd) {
  SnmpCounters counters;
  std::string text;
  {
    NetnsScope in(ns_fd);
    if (!in.ok()) return counters;
    std::ifstream f("/proc/thread-self/net/snmp");
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  // Pairs of lines: "Udp: InDatagrams NoPorts ...", "Udp: 12 0 ...".
  std::istringstream lines(text);
  std::string names, values;
  while (std::getline(lines, names) && std::getline(lines, values)) {
    std::istringstream n(names), v(values);
    std::string proto, proto2, name, value;
    n >> proto;
    v >> proto2;
    if (proto != proto2 || proto.empty()) break;
    proto.pop_back();  // the colon
    while (n >> name && v >> value)
      counters[proto + "." + name] = std::stoull(value[0] == '-' ? "0" : value);
  }
  return counters;
}

std::vector<std::string> UplinkLab::node_fdb_self_permanent() const {
  std::vector<std::string> macs;
  std::string out;
  if (in_node(std::string("bridge -j fdb show dev ") + kNodeIf, &out) != 0) return macs;
  const json j = json::parse(out, nullptr, false);
  if (!j.is_array()) return macs;
  for (const json& e : j) {
    const bool self = e.contains("flags") &&
                      std::find(e["flags"].begin(), e["flags"].end(), "self") != e["flags"].end();
    if (self && e.value("state", "") == "permanent") macs.push_back(e.value("mac", ""));
  }
  return macs;
}

std::vector<UplinkLab::XdpProgramInfo> UplinkLab::node_xdp_programs() const {
  std::vector<XdpProgramInfo> programs;
  std::string out;
  if (run_shell("ip -n " + node_ns() + " -d -j link show " + kNodeIf, &out) != 0) return programs;
  const json j = json::parse(out, nullptr, false);
  if (!j.is_array() || j.empty() || !j[0].contains("xdp")) return programs;
  const json& xdp = j[0]["xdp"];
  auto add = [&](const json& prog) {
    programs.push_back(XdpProgramInfo{prog.value("name", "?"), prog.value("id", 0u)});
  };
  if (xdp.contains("attached")) {
    for (const json& a : xdp["attached"])
      if (a.contains("prog")) add(a["prog"]);
  } else if (xdp.contains("prog")) {
    add(xdp["prog"]);
  }
  return programs;
}

int UplinkLab::node_promiscuity() const {
  std::string out;
  if (run_shell("ip -n " + node_ns() + " -d -j link show " + kNodeIf, &out) != 0) return -1;
  const json j = json::parse(out, nullptr, false);
  if (!j.is_array() || j.empty()) return -1;
  return j[0].value("promiscuity", -1);
}

std::string UplinkLab::node_operstate() const {
  std::string out;
  if (run_shell("ip -n " + node_ns() + " -j link show " + kNodeIf, &out) != 0) return "";
  const json j = json::parse(out, nullptr, false);
  if (!j.is_array() || j.empty()) return "";
  return j[0].value("operstate", "");
}

}  // namespace xdpvhost::uplink_test
