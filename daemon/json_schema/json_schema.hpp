#pragma once
// A JSON Schema (draft 2020-12) validator over nlohmann::json for the keywords
// proto/ uses. A schema that uses any other keyword is refused when it is
// added, so no rule in proto/ can go unchecked silently.
//
// Implemented: type (incl. integer), enum, const, properties, required,
// additionalProperties (bool | schema), propertyNames, minProperties,
// maxProperties, items, prefixItems, minItems, maxItems, uniqueItems,
// minimum, maximum, exclusiveMinimum, exclusiveMaximum, minLength, maxLength,
// pattern (std::regex ECMAScript, unanchored search as the spec says), allOf,
// anyOf, oneOf, not, $ref (to "#/json/pointer" in the same document, or to
// another added document by absolute or relative URI), $defs, boolean
// schemas. Annotations are accepted and ignored: $schema (must be 2020-12),
// $id (document root only), $comment, title, description, default, examples,
// deprecated, readOnly, writeOnly.
//
// A "pattern" must come with a "maxLength" in the same schema: std::regex
// recurses per character, and the length is checked first, so no untrusted
// string reaches the regex engine unbounded.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace xdpvhost::daemon {

// One violation. `path` names the offending value: "ports[0].mac",
// "params.name", "stats[\"vm-1\"]"; empty for the root when no root name was
// given.
struct SchemaError {
  std::string path;
  std::string message;

  // "path: message", or just the message when the path is empty.
  std::string to_string() const;
};

// Joins errors as "a: x; b: y".
std::string join_errors(const std::vector<SchemaError>& errors);

// One compiled (sub)schema. Owned by the SchemaSet that compiled it; valid as
// long as that set lives (moving the set keeps it valid).
class Schema;

// Compiled schema documents, addressed by their "$id".
class SchemaSet {
 public:
  SchemaSet();
  ~SchemaSet();
  SchemaSet(SchemaSet&&) noexcept;
  SchemaSet& operator=(SchemaSet&&) noexcept;
  SchemaSet(const SchemaSet&) = delete;
  SchemaSet& operator=(const SchemaSet&) = delete;

  // Compiles one document: an object with an absolute "$id" (scheme://...)
  // not added before. Returns "" on success, else what is wrong and where,
  // e.g. `https://x/config.schema.json#/$defs/port: unknown keyword "format"`.
  // On failure nothing of the document is kept.
  std::string add(const nlohmann::json& document);

  // Resolves every "$ref" of the documents added so far. Returns "" or the
  // first reference that names no compiled schema. Call after the last add();
  // validating through an unresolved $ref reports an error.
  std::string link();

  // The schema at `uri`: a document's "$id", optionally followed by a JSON
  // pointer fragment ("...config.schema.json#/$defs/port"). nullptr if that
  // location holds no schema.
  const Schema* find(std::string_view uri) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Validates `instance` against `schema`. Returns the violations (empty when
// valid), at most `max_errors` of them. Paths start with `root` ("params"
// gives "params.mac"; "" gives "mac"). Never throws.
std::vector<SchemaError> validate(const Schema& schema, const nlohmann::json& instance,
                                  std::string_view root = {}, std::size_t max_errors = 32);

}  // namespace xdpvhost::daemon
