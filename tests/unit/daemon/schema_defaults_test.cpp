// The defaults live in the C++ types (dataplane::Tunables, controller::
// PortConfig and UplinkConfig, the daemon's Config); proto/config.schema.json
// repeats them as "default" for readers and editors. Every "default" the
// schema states must be what a default-constructed value writes out.

#include <gtest/gtest.h>

#include <string>

#include "config/config.hpp"
#include "config/config_rules.hpp"
#include "vhost/device.hpp"
#include "schemas/schema_registry.hpp"

namespace xdpvhost::daemon {
namespace {

using nlohmann::json;

const json& config_schema() {
  const json* doc = SchemaRegistry::embedded().document("config.schema.json");
  EXPECT_NE(doc, nullptr);
  return *doc;
}

// Every property of $defs/`def` that states a default, compared with the same
// member of `written` (to_json of a default-constructed value). Returns how
// many were compared.
int expect_defaults(const std::string& def, const json& written) {
  const json& props = config_schema().at("$defs").at(def).at("properties");
  int compared = 0;
  for (const auto& [name, schema] : props.items()) {
    if (!schema.contains("default")) continue;
    ++compared;
    EXPECT_TRUE(written.contains(name)) << def << "." << name << " has a schema default";
    if (written.contains(name)) {
      EXPECT_EQ(written.at(name), schema.at("default")) << def << "." << name;
    }
  }
  return compared;
}

TEST(SchemaDefaults, TunablesAreTheDataplaneDefaults) {
  EXPECT_EQ(expect_defaults("tunables", to_json(dataplane::Tunables{})), 12);
}

TEST(SchemaDefaults, PortAndUplinkAreTheControllerDefaults) {
  PortConfig port;
  port.name = std::string("port");
  port.socket = std::string("/run/port.sock");
  EXPECT_EQ(expect_defaults("port", to_json(port)), 3);  // mode, queues, mtu
  UplinkConfig uplink;
  uplink.name = std::string("uplink");
  uplink.interface = std::string("eth0");
  EXPECT_EQ(expect_defaults("uplink", to_json(uplink)), 4);  // queues, bind, frame_size, ring_size
}

// The queue-pair ceiling has one definition (vhost::Device::kMaxQueuePairs);
// every schema that states it states that one, and the config rules and the
// device enforce it.
TEST(QueuePairLimit, IsTheDevicesEverywhere) {
  const std::uint32_t max = vhost::Device::kMaxQueuePairs;
  EXPECT_GE(max, 64u) << "the documented ceiling is at least 64 pairs";
  EXPECT_EQ(vhost::Device::kMaxVrings, 2 * max);
  EXPECT_EQ(config_schema().at("$defs").at("port").at("properties").at("queues").at("maximum"),
            max);
  const json& types = *SchemaRegistry::embedded().document("types.schema.json");
  int stated = 0;
  for (const auto& [name, def] : types.at("$defs").items())
    if (def.contains("properties") && def.at("properties").contains("queue_pairs") &&
        def.at("properties").at("queue_pairs").contains("maximum")) {
      EXPECT_EQ(def.at("properties").at("queue_pairs").at("maximum"), max) << name;
      ++stated;
    }
  EXPECT_EQ(stated, 2) << "port_summary and the port of port.add";
}

TEST(QueuePairLimit, TheConfigRulesRefuseMoreThanTheCeiling) {
  PortConfig port;
  port.name = std::string("vm1");
  port.socket = std::string("/run/xdpvhost/vm1.sock");
  port.mac_policy = dataplane::MacPolicy::kLearn;
  port.queue_pairs = vhost::Device::kMaxQueuePairs;
  EXPECT_FALSE(config_rules::check_port_fields(port, "ports[0]")) << "the ceiling itself";
  port.queue_pairs = vhost::Device::kMaxQueuePairs + 1;
  const auto e = config_rules::check_port_fields(port, "ports[0]");
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("1 to " + std::to_string(vhost::Device::kMaxQueuePairs)),
            std::string::npos)
      << e->message;
  port.queue_pairs = 0;
  EXPECT_TRUE(config_rules::check_port_fields(port, "ports[0]"));
}

TEST(SchemaDefaults, DaemonSectionsAreTheConfigDefaults) {
  const json written = to_json(Config{});
  EXPECT_EQ(expect_defaults("threads", written.at("threads")), 1);
  EXPECT_EQ(expect_defaults("control", written.at("control")), 3);  // socket, mode, idle_timeout_s
  EXPECT_EQ(expect_defaults("metrics", written.at("metrics")), 2);  // listen, zero_breakdowns
  EXPECT_EQ(expect_defaults("log", written.at("log")), 2);
  EXPECT_EQ(expect_defaults("security", written.at("security")), 1);
  const json& top = config_schema().at("properties");
  EXPECT_EQ(written.at("ports"), top.at("ports").at("default"));
  EXPECT_EQ(written.at("uplinks"), top.at("uplinks").at("default"));
  EXPECT_EQ(written.at("socket_dirs"), top.at("socket_dirs").at("default"));
}

}  // namespace
}  // namespace xdpvhost::daemon
