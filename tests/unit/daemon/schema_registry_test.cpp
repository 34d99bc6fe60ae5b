// The registry over the embedded proto/ files.

#include "schemas/schema_registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "proto/rpc_error_code.hpp"

namespace xdpvhost::daemon {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SchemaRegistry, EmbeddedFilesAreExactlyTheProtoDirectory) {
  const fs::path dir = XDPVHOST_PROTO_DIR;
  std::set<std::string> on_disk;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      on_disk.insert(fs::relative(entry.path(), dir).string());
    }
  }
  std::set<std::string> embedded;
  for (const auto& f : proto_files()) {
    embedded.insert(std::string(f.path));
    EXPECT_EQ(f.content, read_file(dir / f.path)) << f.path << " is stale in the binary";
  }
  EXPECT_EQ(embedded, on_disk);
  EXPECT_TRUE(
      std::is_sorted(proto_files().begin(), proto_files().end(),
                     [](const ProtoFile& a, const ProtoFile& b) { return a.path < b.path; }));
}

TEST(SchemaRegistry, ListsEveryMethodWithParamsAndResult) {
  const auto& reg = SchemaRegistry::embedded();
  const std::vector<std::string> expected = {
      "config.get",   "health",     "log.set_level", "port.add",      "port.get", "port.list",
      "port.remove",  "queue.move", "stats.get",     "stats.reset",   "status",   "tunables.get",
      "tunables.set", "uplink.add", "uplink.list",   "uplink.remove", "version"};
  EXPECT_EQ(reg.methods(), expected);
  for (const auto& m : reg.methods()) {
    EXPECT_TRUE(reg.has_method(m)) << m;
    EXPECT_NE(reg.params(m), nullptr) << m;
    EXPECT_NE(reg.result(m), nullptr) << m;
  }
  EXPECT_EQ(reg.params("port.frobnicate"), nullptr);
  EXPECT_EQ(reg.result("port.frobnicate"), nullptr);
  EXPECT_EQ(reg.params(""), nullptr);
  EXPECT_EQ(reg.params("../config.schema"), nullptr);
  EXPECT_EQ(reg.params("port.get.json#/$defs/params"), nullptr);
}

TEST(SchemaRegistry, ParamsOfMethodsWithoutParamsAcceptOnlyAnEmptyObject) {
  const auto& reg = SchemaRegistry::embedded();
  for (const char* m : {"version", "status", "port.list", "uplink.list", "config.get"}) {
    EXPECT_TRUE(validate(*reg.params(m), json::object()).empty()) << m;
    auto errors = validate(*reg.params(m), {{"verbose", true}}, "params");
    ASSERT_EQ(errors.size(), 1u) << m;
    EXPECT_EQ(errors[0].to_string(), "params: unknown field \"verbose\"");
  }
}

TEST(SchemaRegistry, ConfigAndEnvelopeSchemas) {
  const auto& reg = SchemaRegistry::embedded();
  EXPECT_TRUE(validate(reg.config(), json::object()).empty());
  EXPECT_FALSE(validate(reg.config(), json::array()).empty());
  for (const char* def : {"port", "uplink", "tunables", "port_tunables", "uplink_tunables", "mac",
                          "name", "threads", "control", "metrics", "log"}) {
    EXPECT_NE(reg.config_def(def), nullptr) << def;
  }
  EXPECT_EQ(reg.config_def("nope"), nullptr);
  EXPECT_TRUE(
      validate(reg.rpc_request(), {{"jsonrpc", "2.0"}, {"method", "status"}, {"id", 1}}).empty());
  EXPECT_TRUE(
      validate(reg.rpc_response(), {{"jsonrpc", "2.0"}, {"result", {{"a", 1}}}, {"id", "x"}})
          .empty());
  EXPECT_NE(reg.find(std::string(kProtoBaseUri) + "types.schema.json#/$defs/port_stats"), nullptr);
}

TEST(SchemaRegistry, ErrorTableMatchesTheCodeEnum) {
  const auto& reg = SchemaRegistry::embedded();
  std::set<int> table_codes;
  for (const auto& e : reg.errors()) {
    EXPECT_TRUE(table_codes.insert(e.code).second) << "code " << e.code << " listed twice";
    EXPECT_FALSE(e.title.empty());
    EXPECT_FALSE(e.description.empty());
    bool in_enum = std::any_of(kRpcErrorCodes.begin(), kRpcErrorCodes.end(),
                               [&](const auto& c) { return static_cast<int>(c.value) == e.code; });
    EXPECT_TRUE(in_enum) << e.code << " (" << e.name << ") is not in RpcErrorCode";
  }
  for (const auto& [c, name] : kRpcErrorCodes) {
    const RpcErrorInfo* info = reg.error(static_cast<int>(c));
    ASSERT_NE(info, nullptr) << static_cast<int>(c) << " is not in errors.json";
    EXPECT_EQ(info->name, name);
    EXPECT_EQ(to_string(c), name);
  }
  EXPECT_EQ(reg.errors().size(), kRpcErrorCodes.size());
  EXPECT_EQ(reg.error(12345), nullptr);
  EXPECT_EQ(reg.error(-32001)->name, "name_in_use");
}

TEST(SchemaRegistry, DocumentsAreAvailable) {
  const auto& reg = SchemaRegistry::embedded();
  ASSERT_NE(reg.document("examples/config-demo.json"), nullptr);
  EXPECT_TRUE(reg.document("examples/config-demo.json")->contains("ports"));
  EXPECT_EQ(reg.document("nope.json"), nullptr);
  auto paths = reg.paths();
  EXPECT_EQ(paths.size(), proto_files().size());
}

// build() refuses broken proto sets with a message naming the file.
TEST(SchemaRegistry, BuildRefusesBrokenFiles) {
  std::vector<std::string> contents;
  std::vector<ProtoFile> files(proto_files().begin(), proto_files().end());
  std::string error;
  ASSERT_NE(SchemaRegistry::build(files, error), nullptr) << error;

  auto replaced = [&](std::string_view path, std::string content) {
    std::vector<ProtoFile> copy = files;
    contents.push_back(std::move(content));
    for (auto& f : copy) {
      if (f.path == path) f.content = contents.back();
    }
    return copy;
  };
  auto expect_refused = [&](std::vector<ProtoFile> set, const std::string& needle) {
    std::string err;
    EXPECT_EQ(SchemaRegistry::build(set, err), nullptr) << needle;
    EXPECT_NE(err.find(needle), std::string::npos) << err;
  };
  contents.reserve(16);
  expect_refused(replaced("methods/status.json", "{"), "methods/status.json: not valid JSON");

  json status = *SchemaRegistry::embedded().document("methods/status.json");
  status["$defs"].erase("result");
  expect_refused(replaced("methods/status.json", status.dump()), "methods/status.json");

  json config = *SchemaRegistry::embedded().document("config.schema.json");
  config["$defs"]["port"]["properties"]["mac"]["format"] = "mac";
  expect_refused(replaced("config.schema.json", config.dump()), "unknown keyword \"format\"");

  json types = *SchemaRegistry::embedded().document("types.schema.json");
  types["$defs"]["port_summary"]["properties"]["name"]["$ref"] = "config.schema.json#/$defs/nmae";
  expect_refused(replaced("types.schema.json", types.dump()), "names no schema");

  expect_refused(replaced("errors.json", "{\"errors\": [{\"code\": 1}]}"), "errors.json");
}

}  // namespace
}  // namespace xdpvhost::daemon
