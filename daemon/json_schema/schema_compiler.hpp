#pragma once
// Compiles one schema document into Schema nodes. Each keyword of a schema
// object is compiled by its entry in keyword_table.cpp; a keyword with no
// entry fails the document.

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_schema/schema_node.hpp"

namespace xdpvhost::daemon::json_schema {

class Compiler {
 public:
  explicit Compiler(std::string document_id) : id_(std::move(document_id)) {}

  // Compiles the schema `j` found at JSON pointer `pointer` ("" for the
  // document root) and every schema inside it. nullptr after a failure:
  // `error` says what and where.
  const Schema* compile(const nlohmann::json& j, const std::string& pointer);

  // Keeps the first failure, as "id#pointer: what". Always false.
  bool fail(const std::string& pointer, const std::string& what);

  // The document's "$id", which relative $refs resolve against.
  const std::string& document_id() const noexcept { return id_; }

  std::string error;
  std::vector<std::unique_ptr<Schema>> nodes;               // every node compiled
  std::map<std::string, Schema*, std::less<>> by_location;  // "uri#pointer" -> node

 private:
  std::string id_;
};

}  // namespace xdpvhost::daemon::json_schema
