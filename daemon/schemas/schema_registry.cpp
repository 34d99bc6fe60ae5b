#include "schemas/schema_registry.hpp"

#include <cstdio>
#include <cstdlib>

namespace xdpvhost::daemon {

using nlohmann::json;

namespace {

constexpr std::string_view kMethodsDir = "methods/";
constexpr std::string_view kExamplesDir = "examples/";
constexpr std::string_view kErrorsFile = "errors.json";
constexpr std::string_view kJsonSuffix = ".json";

bool is_schema_document(std::string_view path) {
  return path != kErrorsFile && path.substr(0, kExamplesDir.size()) != kExamplesDir;
}

std::string method_name(std::string_view path) {
  if (path.substr(0, kMethodsDir.size()) != kMethodsDir) return {};
  std::string_view rest = path.substr(kMethodsDir.size());
  if (rest.size() <= kJsonSuffix.size() || rest.find('/') != std::string_view::npos) return {};
  return std::string(rest.substr(0, rest.size() - kJsonSuffix.size()));
}

bool parse_errors(const json& doc, std::vector<RpcErrorInfo>& out, std::string& error) {
  const auto it = doc.find("errors");
  if (it == doc.end() || !it->is_array()) {
    error = "errors.json: no \"errors\" array";
    return false;
  }
  for (const auto& e : *it) {
    if (!e.is_object() || !e.contains("code") || !e["code"].is_number_integer() ||
        !e.contains("name") || !e["name"].is_string() || !e.contains("title") ||
        !e["title"].is_string() || !e.contains("description") || !e["description"].is_string()) {
      error = "errors.json: every entry needs code, name, title and description";
      return false;
    }
    out.push_back({e["code"].get<int>(), e["name"].get<std::string>(),
                   e["title"].get<std::string>(), e["description"].get<std::string>()});
  }
  return true;
}

}  // namespace

SchemaRegistry::~SchemaRegistry() = default;

std::unique_ptr<SchemaRegistry> SchemaRegistry::build(std::span<const ProtoFile> files,
                                                      std::string& error) {
  std::unique_ptr<SchemaRegistry> reg(new SchemaRegistry());
  try {
    for (const auto& file : files) {
      json doc = json::parse(file.content, nullptr, false);
      if (doc.is_discarded()) {
        error = std::string(file.path) + ": not valid JSON";
        return nullptr;
      }
      reg->documents_.emplace(std::string(file.path), std::move(doc));
    }
    for (const auto& [path, doc] : reg->documents_) {
      if (!is_schema_document(path)) continue;
      std::string problem = reg->schemas_.add(doc);
      if (!problem.empty()) {
        // NOLINTNEXTLINE(performance-inefficient-string-concatenation): built once, then return
        error = path + ": " + problem;
        return nullptr;
      }
    }
    if (std::string problem = reg->schemas_.link(); !problem.empty()) {
      error = problem;
      return nullptr;
    }
    const std::string base(kProtoBaseUri);
    for (const auto& [path, doc] : reg->documents_) {
      std::string name = method_name(path);
      if (name.empty()) continue;
      const std::string id = base + path;
      if (doc.value("$id", std::string()) != id) {
        // NOLINTNEXTLINE(performance-inefficient-string-concatenation): built once, then return
        error = path + ": \"$id\" must be " + id;
        return nullptr;
      }
      if (!reg->schemas_.find(id + "#/$defs/params") ||
          !reg->schemas_.find(id + "#/$defs/result")) {
        error = path + ": needs $defs/params and $defs/result";
        return nullptr;
      }
      reg->methods_.push_back(name);
    }
    reg->config_ = reg->schemas_.find(base + "config.schema.json");
    reg->rpc_request_ = reg->schemas_.find(base + "rpc.schema.json#/$defs/request");
    reg->rpc_response_ = reg->schemas_.find(base + "rpc.schema.json#/$defs/response");
    if (!reg->config_ || !reg->rpc_request_ || !reg->rpc_response_) {
      error = "config.schema.json or rpc.schema.json (request, response) is missing";
      return nullptr;
    }
    auto errors_it = reg->documents_.find(kErrorsFile);
    if (errors_it == reg->documents_.end()) {
      error = "errors.json is missing";
      return nullptr;
    }
    if (!parse_errors(errors_it->second, reg->errors_, error)) return nullptr;
  } catch (const std::exception& e) {
    error = std::string("building the schema registry failed: ") + e.what();
    return nullptr;
  }
  return reg;
}

const SchemaRegistry& SchemaRegistry::embedded() {
  static const std::unique_ptr<SchemaRegistry> registry = [] {
    std::string error;
    auto reg = build(proto_files(), error);
    if (!reg) {
      std::fprintf(stderr, "xdpvhost: the embedded proto/ schemas are broken: %s\n", error.c_str());
      std::abort();
    }
    return reg;
  }();
  return *registry;
}

const Schema* SchemaRegistry::config_def(std::string_view name) const {
  return schemas_.find(std::string(kProtoBaseUri) + "config.schema.json#/$defs/" +
                       std::string(name));
}

const Schema* SchemaRegistry::params(std::string_view method) const {
  if (method.empty() || method.find_first_of("/#") != std::string_view::npos) return nullptr;
  return schemas_.find(std::string(kProtoBaseUri) + "methods/" + std::string(method) +
                       ".json#/$defs/params");
}

const Schema* SchemaRegistry::result(std::string_view method) const {
  if (method.empty() || method.find_first_of("/#") != std::string_view::npos) return nullptr;
  return schemas_.find(std::string(kProtoBaseUri) + "methods/" + std::string(method) +
                       ".json#/$defs/result");
}

const RpcErrorInfo* SchemaRegistry::error(int code) const {
  for (const auto& e : errors_) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

const json* SchemaRegistry::document(std::string_view path) const {
  auto it = documents_.find(path);
  return it == documents_.end() ? nullptr : &it->second;
}

std::vector<std::string> SchemaRegistry::paths() const {
  std::vector<std::string> out;
  for (const auto& [path, doc] : documents_) out.push_back(path);
  return out;
}

}  // namespace xdpvhost::daemon
