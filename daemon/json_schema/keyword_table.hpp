#pragma once
// Every JSON Schema keyword this validator implements, in one table: its
// name and the function that compiles it into a Schema node. A keyword that
// is not in the table is refused when a document is added.

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "json_schema/schema_node.hpp"

namespace xdpvhost::daemon::json_schema {

class Compiler;

// One keyword of a schema object, as its compile function sees it.
struct Keyword {
  Compiler& compiler;       // compiles subschemas, records failures
  Schema& schema;           // the node the keyword belongs to
  const std::string& name;  // "minLength"
  const nlohmann::json& value;
  const std::string& pointer;  // the schema object's JSON pointer ("" at the root)
  const std::string& here;     // the keyword's own pointer: pointer + "/" + name
};

struct KeywordSpec {
  std::string_view name;
  // Checks the value and records it in keyword.schema; false (after
  // Compiler::fail) if the value is not what the keyword takes.
  bool (*compile)(const Keyword& keyword);
};

// The spec for keyword `name`, or nullptr if it is not implemented.
const KeywordSpec* find_keyword(std::string_view name) noexcept;

}  // namespace xdpvhost::daemon::json_schema
