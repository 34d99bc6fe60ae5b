// Compiles JSON Schema documents into Schema nodes and links their $refs.

#include "json_schema/json_schema.hpp"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "json_schema/schema_node.hpp"

namespace xdpvhost::daemon {

using nlohmann::json;

namespace {

constexpr std::string_view kDraft202012 = "https://json-schema.org/draft/2020-12/schema";

std::string escape_pointer_token(std::string_view token) {
  std::string out;
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

// "scheme:" prefix: letters, digits, + - . before the first ':' and no '/'.
bool has_scheme(std::string_view uri) {
  auto colon = uri.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  for (std::size_t i = 0; i < colon; ++i) {
    char c = uri[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

// Splits an absolute URI into "scheme://authority" and the path.
std::pair<std::string, std::string> split_authority(const std::string& uri) {
  auto scheme_end = uri.find("://");
  if (scheme_end == std::string::npos) {
    auto colon = uri.find(':');
    return {uri.substr(0, colon + 1), uri.substr(colon + 1)};
  }
  auto path_start = uri.find('/', scheme_end + 3);
  if (path_start == std::string::npos) return {uri, "/"};
  return {uri.substr(0, path_start), uri.substr(path_start)};
}

std::string remove_dot_segments(const std::string& path) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  bool absolute = !path.empty() && path[0] == '/';
  if (absolute) pos = 1;
  bool trailing_slash = false;
  while (pos <= path.size()) {
    auto next = path.find('/', pos);
    std::string seg = path.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    trailing_slash = false;
    if (seg == ".") {
      trailing_slash = true;
    } else if (seg == "..") {
      if (!out.empty()) out.pop_back();
      trailing_slash = true;
    } else {
      out.push_back(seg);
    }
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  std::string result = absolute ? "/" : "";
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i > 0) result += '/';
    result += out[i];
  }
  if (trailing_slash && !result.empty() && result.back() != '/') result += '/';
  return result;
}

// Resolves `ref` against the absolute document URI `base` (RFC 3986 style,
// enough for "#/ptr", "other.json#/ptr", "../x.json", "/abs.json" and
// absolute URIs). Returns "uri#fragment" with an empty fragment for a root.
std::string resolve_reference(const std::string& base, std::string_view ref) {
  auto hash = ref.find('#');
  std::string_view ref_uri = ref.substr(0, hash);
  std::string fragment = hash == std::string_view::npos ? "" : std::string(ref.substr(hash + 1));
  std::string target;
  if (ref_uri.empty()) {
    target = base;
  } else if (has_scheme(ref_uri)) {
    auto [authority, path] = split_authority(std::string(ref_uri));
    target = authority + remove_dot_segments(path);
  } else {
    auto [authority, base_path] = split_authority(base);
    if (ref_uri.substr(0, 2) == "//") {
      target = authority.substr(0, authority.find(':') + 1) + std::string(ref_uri);
    } else if (ref_uri[0] == '/') {
      target = authority + remove_dot_segments(std::string(ref_uri));
    } else {
      std::string dir = base_path.substr(0, base_path.rfind('/') + 1);
      target = authority + remove_dot_segments(dir + std::string(ref_uri));
    }
  }
  return target + "#" + fragment;
}

std::string normalize_location(std::string_view uri) {
  std::string out(uri);
  if (out.find('#') == std::string::npos) out += '#';
  return out;
}

bool is_count(const json& j) {
  return j.is_number_unsigned() || (j.is_number_integer() && j.get<std::int64_t>() >= 0);
}

class Compiler {
 public:
  explicit Compiler(std::string document_id) : id_(std::move(document_id)) {}

  const Schema* compile(const json& j, const std::string& pointer);

  std::string error;
  std::vector<std::unique_ptr<Schema>> nodes;
  std::map<std::string, Schema*, std::less<>> by_location;

 private:
  bool fail(const std::string& pointer, const std::string& what) {
    if (error.empty()) error = id_ + "#" + pointer + ": " + what;
    return false;
  }
  bool compile_keyword(Schema& s, const std::string& key, const json& value,
                       const std::string& pointer);
  bool schema_array(const json& value, const std::string& pointer, const std::string& key,
                    std::vector<const Schema*>& out);
  bool count(const json& value, const std::string& pointer, const std::string& key,
             std::optional<std::size_t>& out);

  std::string id_;
};

const Schema* Compiler::compile(const json& j, const std::string& pointer) {
  auto node = std::make_unique<Schema>();
  Schema& s = *node;
  s.location = id_ + "#" + pointer;
  if (j.is_boolean()) {
    s.constant = j.get<bool>();
  } else if (!j.is_object()) {
    fail(pointer, "a schema must be an object or a boolean");
    return nullptr;
  } else {
    for (const auto& [key, value] : j.items()) {
      if (!compile_keyword(s, key, value, pointer)) return nullptr;
    }
    if (s.pattern && !s.max_length) {
      fail(pointer, "\"pattern\" needs a \"maxLength\" in the same schema");
      return nullptr;
    }
  }
  Schema* raw = node.get();
  nodes.push_back(std::move(node));
  by_location[raw->location] = raw;
  return raw;
}

bool Compiler::schema_array(const json& value, const std::string& pointer, const std::string& key,
                            std::vector<const Schema*>& out) {
  if (!value.is_array() || value.empty()) {
    return fail(pointer, "\"" + key + "\" must be a non-empty array of schemas");
  }
  const std::string items = pointer + "/" + key + "/";
  for (std::size_t i = 0; i < value.size(); ++i) {
    const Schema* sub = compile(value[i], items + std::to_string(i));
    if (!sub) return false;
    out.push_back(sub);
  }
  return true;
}

bool Compiler::count(const json& value, const std::string& pointer, const std::string& key,
                     std::optional<std::size_t>& out) {
  if (!is_count(value)) return fail(pointer, "\"" + key + "\" must be a non-negative integer");
  out = value.get<std::size_t>();
  return true;
}

bool Compiler::compile_keyword(Schema& s, const std::string& key, const json& value,
                               const std::string& pointer) {
  const std::string here = pointer + "/" + escape_pointer_token(key);
  // Annotations.
  if (key == "$schema") {
    if (!pointer.empty()) return fail(pointer, "\"$schema\" is only allowed at the document root");
    if (!value.is_string() || value.get<std::string>() != kDraft202012) {
      return fail(pointer, "\"$schema\" must be " + std::string(kDraft202012));
    }
    return true;
  }
  if (key == "$id") {
    if (!pointer.empty()) return fail(pointer, "\"$id\" is only supported at the document root");
    return true;  // checked by SchemaSet::add
  }
  if (key == "$comment" || key == "description") {
    if (!value.is_string()) return fail(pointer, "\"" + key + "\" must be a string");
    return true;
  }
  if (key == "title") {
    if (!value.is_string()) return fail(pointer, "\"title\" must be a string");
    s.title = value.get<std::string>();
    return true;
  }
  if (key == "default") return true;
  if (key == "examples") {
    if (!value.is_array()) return fail(pointer, "\"examples\" must be an array");
    return true;
  }
  if (key == "deprecated" || key == "readOnly" || key == "writeOnly") {
    if (!value.is_boolean()) return fail(pointer, "\"" + key + "\" must be a boolean");
    return true;
  }
  if (key == "$defs") {
    if (!value.is_object()) return fail(pointer, "\"$defs\" must be an object");
    for (const auto& [name, sub] : value.items()) {
      if (!compile(sub, here + "/" + escape_pointer_token(name))) return false;
    }
    return true;
  }
  if (key == "$ref") {
    if (!value.is_string()) return fail(pointer, "\"$ref\" must be a string");
    const auto& ref = value.get_ref<const std::string&>();
    auto hash = ref.find('#');
    if (hash != std::string::npos && hash + 1 < ref.size() && ref[hash + 1] != '/') {
      return fail(pointer, "\"$ref\" " + ref + ": only JSON pointer fragments are supported");
    }
    s.ref = resolve_reference(id_, ref);
    return true;
  }
  // Assertions and applicators.
  if (key == "type") {
    std::vector<std::string> names;
    if (value.is_string()) {
      names.push_back(value.get<std::string>());
    } else if (value.is_array() && !value.empty()) {
      for (const auto& n : value) {
        if (!n.is_string()) return fail(pointer, "\"type\" entries must be strings");
        names.push_back(n.get<std::string>());
      }
    } else {
      return fail(pointer, "\"type\" must be a string or a non-empty array of strings");
    }
    for (const auto& n : names) {
      std::uint8_t bit = n == "null"      ? kTypeNull
                         : n == "boolean" ? kTypeBoolean
                         : n == "object"  ? kTypeObject
                         : n == "array"   ? kTypeArray
                         : n == "number"  ? kTypeNumber
                         : n == "integer" ? kTypeInteger
                         : n == "string"  ? kTypeString
                                          : 0;
      if (bit == 0) return fail(pointer, "unknown type \"" + n + "\"");
      if (s.types & bit) return fail(pointer, "type \"" + n + "\" listed twice");
      s.types |= bit;
    }
    return true;
  }
  if (key == "enum") {
    if (!value.is_array() || value.empty())
      return fail(pointer, "\"enum\" must be a non-empty array");
    s.enum_values = std::vector<json>(value.begin(), value.end());
    return true;
  }
  if (key == "const") {
    s.const_value = value;
    return true;
  }
  if (key == "properties") {
    if (!value.is_object()) return fail(pointer, "\"properties\" must be an object");
    for (const auto& [name, sub] : value.items()) {
      const Schema* p = compile(sub, here + "/" + escape_pointer_token(name));
      if (!p) return false;
      s.properties.emplace_back(name, p);
      s.property_index[name] = p;
    }
    return true;
  }
  if (key == "required") {
    if (!value.is_array()) return fail(pointer, "\"required\" must be an array of strings");
    std::set<std::string> seen;
    for (const auto& n : value) {
      if (!n.is_string()) return fail(pointer, "\"required\" must be an array of strings");
      if (!seen.insert(n.get<std::string>()).second) {
        return fail(pointer, "\"required\" lists \"" + n.get<std::string>() + "\" twice");
      }
      s.required.push_back(n.get<std::string>());
    }
    return true;
  }
  if (key == "additionalProperties") {
    s.additional_properties = compile(value, here);
    return s.additional_properties != nullptr;
  }
  if (key == "propertyNames") {
    s.property_names = compile(value, here);
    return s.property_names != nullptr;
  }
  if (key == "minProperties") return count(value, pointer, key, s.min_properties);
  if (key == "maxProperties") return count(value, pointer, key, s.max_properties);
  if (key == "items") {
    s.items = compile(value, here);
    return s.items != nullptr;
  }
  if (key == "prefixItems") return schema_array(value, pointer, key, s.prefix_items);
  if (key == "minItems") return count(value, pointer, key, s.min_items);
  if (key == "maxItems") return count(value, pointer, key, s.max_items);
  if (key == "uniqueItems") {
    if (!value.is_boolean()) return fail(pointer, "\"uniqueItems\" must be a boolean");
    s.unique_items = value.get<bool>();
    return true;
  }
  if (key == "minimum" || key == "maximum" || key == "exclusiveMinimum" ||
      key == "exclusiveMaximum") {
    if (!value.is_number()) return fail(pointer, "\"" + key + "\" must be a number");
    auto& slot = key == "minimum"            ? s.minimum
                 : key == "maximum"          ? s.maximum
                 : key == "exclusiveMinimum" ? s.exclusive_minimum
                                             : s.exclusive_maximum;
    slot = value;
    return true;
  }
  if (key == "minLength") return count(value, pointer, key, s.min_length);
  if (key == "maxLength") return count(value, pointer, key, s.max_length);
  if (key == "pattern") {
    if (!value.is_string()) return fail(pointer, "\"pattern\" must be a string");
    s.pattern_source = value.get<std::string>();
    try {
      s.pattern.emplace(s.pattern_source, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return fail(pointer,
                  "\"pattern\" " + s.pattern_source + " is not a valid regex: " + e.what());
    }
    return true;
  }
  if (key == "allOf") return schema_array(value, pointer, key, s.all_of);
  if (key == "anyOf") return schema_array(value, pointer, key, s.any_of);
  if (key == "oneOf") return schema_array(value, pointer, key, s.one_of);
  if (key == "not") {
    s.not_schema = compile(value, here);
    return s.not_schema != nullptr;
  }
  return fail(pointer, "unknown keyword \"" + key + "\" (not implemented by this validator)");
}

}  // namespace

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
    if (!has_scheme(id) || id.find('#') != std::string::npos) {
      return "\"$id\" " + id + " must be an absolute URI without fragment";
    }
    if (impl_->documents.count(id)) return "\"$id\" " + id + " was added before";
    Compiler compiler(id);
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
  auto it = impl_->by_location.find(normalize_location(uri));
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
