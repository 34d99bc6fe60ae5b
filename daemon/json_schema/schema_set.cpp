// SchemaSet: compiled documents by "$id", their $refs linked.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "json_schema/json_schema.hpp"
#include "json_schema/schema_compiler.hpp"
#include "json_schema/schema_node.hpp"
#include "json_schema/schema_uri.hpp"

namespace xdpvhost::daemon {

using nlohmann::json;

struct SchemaSet::Impl {
  std::vector<std::unique_ptr<Schema>> nodes;
  std::map<std::string, Schema*, std::less<>> by_location;
  std::set<std::string, std::less<>> documents;
};

SchemaSet::SchemaSet() : impl_(std::make_unique<Impl>()) {}
SchemaSet::~SchemaSet() = default;
SchemaSet::SchemaSet(SchemaSet&&) noexcept = default;
SchemaSet& SchemaSet::operator=(SchemaSet&&) noexcept = default;

std::string SchemaSet::add(const json& document) {
  try {
    if (!document.is_object()) return "a schema document must be a JSON object";
    auto id_it = document.find("$id");
    if (id_it == document.end() || !id_it->is_string()) return "a schema document needs a \"$id\"";
    std::string id = id_it->get<std::string>();
    if (!json_schema::has_scheme(id) || id.find('#') != std::string::npos) {
      return "\"$id\" " + id + " must be an absolute URI without fragment";
    }
    if (impl_->documents.count(id)) return "\"$id\" " + id + " was added before";
    json_schema::Compiler compiler(id);
    if (!compiler.compile(document, "")) return compiler.error;
    for (auto& node : compiler.nodes) impl_->nodes.push_back(std::move(node));
    for (auto& [location, node] : compiler.by_location) impl_->by_location[location] = node;
    impl_->documents.insert(id);
    return "";
  } catch (const std::exception& e) {
    return std::string("schema compilation failed: ") + e.what();
  }
}

std::string SchemaSet::link() {
  for (auto& node : impl_->nodes) {
    if (node->ref.empty()) continue;
    auto it = impl_->by_location.find(node->ref);
    if (it == impl_->by_location.end()) {
      return node->location + ": \"$ref\" " + node->ref + " names no schema";
    }
    node->ref_target = it->second;
  }
  return "";
}

const Schema* SchemaSet::find(std::string_view uri) const {
  auto it = impl_->by_location.find(json_schema::normalize_location(uri));
  return it == impl_->by_location.end() ? nullptr : it->second;
}

std::string SchemaError::to_string() const {
  return path.empty() ? message : path + ": " + message;
}

std::string join_errors(const std::vector<SchemaError>& errors) {
  std::string out;
  for (const auto& e : errors) {
    if (!out.empty()) out += "; ";
    out += e.to_string();
  }
  return out;
}

}  // namespace xdpvhost::daemon
