#include "json_schema/schema_compiler.hpp"

#include "json_schema/keyword_table.hpp"
#include "json_schema/schema_uri.hpp"

namespace xdpvhost::daemon::json_schema {

bool Compiler::fail(const std::string& pointer, const std::string& what) {
  if (error.empty()) error = id_ + "#" + pointer + ": " + what;
  return false;
}

const Schema* Compiler::compile(const nlohmann::json& j, const std::string& pointer) {
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
      const KeywordSpec* spec = find_keyword(key);
      if (!spec) {
        fail(pointer, "unknown keyword \"" + key + "\" (not implemented by this validator)");
        return nullptr;
      }
      const std::string here = pointer + "/" + escape_pointer_token(key);
      if (!spec->compile(Keyword{*this, s, key, value, pointer, here})) return nullptr;
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

}  // namespace xdpvhost::daemon::json_schema
