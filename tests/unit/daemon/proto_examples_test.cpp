// Every example in proto/ validates against the embedded schemas, and the
// config examples also load as typed configs.

#include <gtest/gtest.h>

#include <string>

#include "config/config.hpp"
#include "config/config_change.hpp"
#include "schemas/schema_registry.hpp"

namespace xdpvhost::daemon {
namespace {

using nlohmann::json;

TEST(ProtoExamples, EveryMethodExampleValidates) {
  const auto& reg = SchemaRegistry::embedded();
  int examples = 0;
  for (const auto& method : reg.methods()) {
    const json* doc = reg.document("methods/" + method + ".json");
    ASSERT_NE(doc, nullptr) << method;
    EXPECT_EQ(doc->value("title", ""), method);
    ASSERT_TRUE(doc->contains("examples")) << method;
    ASSERT_GE((*doc)["examples"].size(), 1u) << method;
    const Schema* whole = reg.find(std::string(kProtoBaseUri) + "methods/" + method + ".json");
    ASSERT_NE(whole, nullptr);
    for (const auto& ex : (*doc)["examples"]) {
      ASSERT_TRUE(ex.contains("params") && ex.contains("result")) << method;
      EXPECT_EQ(join_errors(validate(*reg.params(method), ex["params"], "params")), "") << method;
      EXPECT_EQ(join_errors(validate(*reg.result(method), ex["result"], "result")), "") << method;
      EXPECT_EQ(join_errors(validate(*whole, ex)), "") << method;
      // A whole JSON-RPC exchange around the example is well formed too.
      json request = {{"jsonrpc", "2.0"}, {"method", method}, {"params", ex["params"]}, {"id", 1}};
      json response = {{"jsonrpc", "2.0"}, {"result", ex["result"]}, {"id", 1}};
      EXPECT_EQ(join_errors(validate(reg.rpc_request(), request)), "") << method;
      EXPECT_EQ(join_errors(validate(reg.rpc_response(), response)), "") << method;
      ++examples;
    }
  }
  EXPECT_GE(examples, 15);
}

TEST(ProtoExamples, ConfigExamplesValidateAndLoad) {
  const auto& reg = SchemaRegistry::embedded();
  int configs = 0;
  for (const auto& path : reg.paths()) {
    if (path.rfind("examples/config-", 0) != 0) continue;
    const json& doc = *reg.document(path);
    EXPECT_EQ(join_errors(validate(reg.config(), doc)), "") << path;
    auto config = parse_config(doc);
    ASSERT_TRUE(config.ok()) << path << ": " << config.error().message;
    // And they survive the daemon's persistence unchanged.
    auto again = parse_config(to_json(*config));
    ASSERT_TRUE(again.ok()) << path << ": " << again.error().message;
    EXPECT_EQ(*again, *config) << path;
    ++configs;
  }
  EXPECT_GE(configs, 4);
  for (const auto& ex : (*reg.document("config.schema.json"))["examples"]) {
    EXPECT_TRUE(parse_config(ex).ok());
  }
  ASSERT_NE(reg.document("examples/config-demo.json"), nullptr) << "the README's demo config";
}

TEST(ProtoExamples, ErrorTableValidates) {
  const auto& reg = SchemaRegistry::embedded();
  const Schema* table = reg.find(std::string(kProtoBaseUri) + "rpc.schema.json#/$defs/error_table");
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(join_errors(validate(*table, *reg.document("errors.json"))), "");
}

// The typed parsers accept what the method examples send.
TEST(ProtoExamples, MethodParamsParseAsTyped) {
  const auto& reg = SchemaRegistry::embedded();
  for (const auto& ex : (*reg.document("methods/port.add.json"))["examples"]) {
    auto port = parse_port(ex["params"]);
    ASSERT_TRUE(port.ok()) << port.error().message;
    EXPECT_EQ(port->name, ex["result"]["name"].get<std::string>());
    EXPECT_EQ(port->mac ? port->mac->to_string() : "", ex["result"].value("mac", ""));
    EXPECT_STREQ(dataplane::to_string(port->mac_policy),
                 ex["result"]["mac_policy"].get<std::string>().c_str());
    EXPECT_EQ(port->queue_pairs, ex["result"]["queue_pairs"].get<std::uint32_t>());
    EXPECT_EQ(resolve(Tunables{}, port->tunables).signal_batch,
              ex["result"]["tunables"]["signal_batch"].get<std::uint32_t>());
  }
  for (const auto& ex : (*reg.document("methods/uplink.add.json"))["examples"]) {
    auto uplink = parse_uplink(ex["params"]);
    ASSERT_TRUE(uplink.ok()) << uplink.error().message;
    ASSERT_TRUE(uplink->queues.has_value()) << "the example lists its queues";
    EXPECT_EQ(uplink->queues->size(), ex["result"]["queues"].size());
  }
  for (const auto& ex : (*reg.document("methods/tunables.set.json"))["examples"]) {
    auto change = parse_tunables_set(ex["params"]);
    ASSERT_TRUE(change.ok()) << change.error().message;
    EXPECT_EQ(change->port.has_value(), ex["result"]["scope"] == "port");
    EXPECT_EQ(change->uplink.has_value(), ex["result"]["scope"] == "uplink");
  }
}

}  // namespace
}  // namespace xdpvhost::daemon
