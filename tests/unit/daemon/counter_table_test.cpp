// The counter tables (dataplane/counters.hpp) are the one description of
// every counter; the stats.get JSON is built from them. These tests hold the
// tables to proto/types.schema.json (each object's properties are exactly
// what the tables name) and to the rules the generators rely on (unique
// names, a family's entries adjacent, one HELP per family).

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "dataplane/counters.hpp"
#include "vhost/device.hpp"
#include "json_schema/json_schema.hpp"
#include "schemas/schema_registry.hpp"
#include "control/state_json.hpp"

namespace xdpvhost::daemon {
namespace {

using dataplane::PortScope;
using nlohmann::json;

const json& stats_def(const std::string& name) {
  return SchemaRegistry::embedded().document("types.schema.json")->at("$defs").at(name);
}

std::set<std::string> properties(const json& def) {
  std::set<std::string> out;
  for (const auto& [k, v] : def.at("properties").items()) out.insert(k);
  return out;
}

std::set<std::string> required(const json& def) {
  std::set<std::string> out;
  for (const auto& k : def.at("required")) out.insert(k.get<std::string>());
  return out;
}

template <class Set, std::size_t N>
void add_names(std::set<std::string>& out, const std::array<dataplane::CounterField<Set>, N>& t,
               PortScope scope = PortScope::kGuest) {
  for (const auto& e : t) {
    if (e.scope != PortScope::kAll && scope != PortScope::kGuest) continue;
    EXPECT_TRUE(out.insert(std::string(e.info.name)).second) << e.info.name << " twice";
  }
}

void expect_object(const std::string& def, const std::set<std::string>& names) {
  EXPECT_EQ(properties(stats_def(def)), names) << def;
  EXPECT_EQ(required(stats_def(def)), names) << def;
  EXPECT_FALSE(stats_def(def).at("additionalProperties").get<bool>()) << def;
}

TEST(CounterTables, PortStatsAreThePortTable) {
  std::set<std::string> names{"drops", "offload_refused", std::string(dataplane::kMacRefused.name),
                              std::string(dataplane::kQueuePairs.name)};
  add_names(names, dataplane::kPortCounters);
  expect_object("port_stats", names);
}

TEST(CounterTables, MacRefusalReasonsAreTheSchemas) {
  std::set<std::string> reasons;
  for (std::size_t i = 0; i < dataplane::kMacRefusals; ++i)
    reasons.insert(dataplane::to_string(static_cast<dataplane::MacRefusal>(i)));
  // Made on the datapath without a decision: counted, never in port.get.
  EXPECT_EQ(reasons.erase("rate_limited"), 1u);
  std::set<std::string> listed;
  for (const auto& r : stats_def("port_detail")
                           .at("properties")
                           .at("mac_refusal")
                           .at("properties")
                           .at("reason")
                           .at("enum"))
    listed.insert(r.get<std::string>());
  EXPECT_EQ(listed, reasons);
  EXPECT_EQ(reasons.count("unknown"), 0u);
}

TEST(CounterTables, QueuePairStatsAreTheQueuePairTable) {
  std::set<std::string> names{"pair", "thread"};
  add_names(names, dataplane::kQueuePairCounters);
  expect_object("queue_pair_stats", names);
  EXPECT_EQ(stats_def("port_stats").at("properties").at("queue_pairs").at("maxItems"),
            vhost::Device::kMaxQueuePairs);
  EXPECT_EQ(stats_def("queue_pair_stats").at("properties").at("pair").at("maximum"),
            vhost::Device::kMaxQueuePairs - 1);
}

TEST(CounterTables, UplinkStatsAreThePortAndQueueTables) {
  std::set<std::string> queue{"queue"};
  add_names(queue, dataplane::kPortCounters, PortScope::kAll);
  add_names(queue, dataplane::kUplinkQueueCounters);
  expect_object("uplink_queue_stats", queue);
  std::set<std::string> uplink{"drops", "queues"};
  add_names(uplink, dataplane::kPortCounters, PortScope::kAll);
  add_names(uplink, dataplane::kUplinkQueueCounters);
  expect_object("uplink_stats", uplink);
}

TEST(CounterTables, ThreadStatsAreTheThreadTable) {
  std::set<std::string> names{"index", "burst_histogram"};
  add_names(names, dataplane::kThreadCounters);
  expect_object("thread_stats", names);
}

template <class Set, std::size_t N>
void expect_families_well_formed(const std::array<dataplane::CounterField<Set>, N>& t) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < N; ++i) {
    const auto& info = t[i].info;
    const bool first = i == 0 || t[i - 1].info.family != info.family;
    if (first) {
      EXPECT_TRUE(seen.insert(std::string(info.family)).second)
          << info.family << ": entries of a family must be adjacent";
      EXPECT_FALSE(info.help.empty()) << info.family << ": the first entry carries the HELP";
    } else {
      EXPECT_TRUE(info.help.empty()) << info.name << ": only the first entry carries the HELP";
      EXPECT_FALSE(info.label.empty()) << info.name << ": entries sharing a family need a label";
      EXPECT_EQ(t[i].scope, t[i - 1].scope) << info.name;
    }
    EXPECT_EQ(info.family.substr(info.family.size() - 6), "_total") << info.family;
  }
}

TEST(CounterTables, FamiliesAreAdjacentWithOneHelp) {
  expect_families_well_formed(dataplane::kPortCounters);
  expect_families_well_formed(dataplane::kUplinkQueueCounters);
  expect_families_well_formed(dataplane::kThreadCounters);
}

TEST(CounterTables, GeneratedJsonValidatesAgainstTheSchema) {
  const SchemaRegistry& reg = SchemaRegistry::embedded();
  auto def = [&](const char* name) {
    return reg.find(std::string(kProtoBaseUri) + "types.schema.json#/$defs/" + name);
  };
  const Schema* port_schema = def("port_stats");
  const Schema* thread_schema = def("thread_stats");
  const Schema* uplink_schema = def("uplink_stats");
  ASSERT_NE(port_schema, nullptr);
  ASSERT_NE(thread_schema, nullptr);
  ASSERT_NE(uplink_schema, nullptr);

  PortStatsSnapshot port;
  for (std::size_t i = 0; i < port.counters.size(); ++i) port.counters[i] = i + 1;
  port.drops[0] = 7;
  port.pairs.push_back({0, 0, {11, 12}});
  port.pairs.push_back({1, 1, {21, 22}});
  const json p = port_stats(port);
  EXPECT_EQ(p.at("queue_pairs").size(), 2u);
  EXPECT_EQ(p.at("queue_pairs").at(1).at("thread"), 1);
  EXPECT_EQ(p.at("queue_pairs").at(1).at("tx_packets"), 22);
  EXPECT_TRUE(validate(*port_schema, p).empty()) << p.dump();
  EXPECT_EQ(p.at("interrupts_suppressed"),
            dataplane::counter_index(dataplane::kPortCounters,
                                     &dataplane::PortCounters::interrupts_suppressed) +
                1);
  EXPECT_EQ(p.at("drops").at("no_rx_buffer"), 7);

  ThreadStatsSnapshot thread;
  thread.counters.fill(3);
  EXPECT_TRUE(validate(*thread_schema, thread_stats(0, thread)).empty());

  UplinkStatsSnapshot uplink;
  for (std::uint32_t q = 0; q < 2; ++q) {
    UplinkQueueStatsSnapshot s;
    s.queue = q;
    s.port.counters.fill(10);
    s.counters.fill(1);
    uplink.queues.push_back(s);
  }
  const json u = uplink_stats(uplink);
  EXPECT_TRUE(validate(*uplink_schema, u).empty()) << u.dump();
  EXPECT_EQ(u.at("rx_packets"), 20) << "totals are the sums of the queues";
  EXPECT_EQ(u.at("tx_kicks"), 2);
  EXPECT_EQ(u.at("queues").size(), 2u);
  EXPECT_FALSE(u.at("queues").at(0).contains("kicks")) << "guest-only counters stay off uplinks";
}

}  // namespace
}  // namespace xdpvhost::daemon
