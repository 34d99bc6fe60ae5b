#pragma once
// The compiled form of one JSON Schema object, written by the compiler
// (schema_compiler.cpp, keyword_table.cpp) and read by the validator
// (validator.cpp). Not part of the public API: users hold `const Schema*`
// from SchemaSet::find().

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

// GCC 12 with -fsanitize=address reports a false -Wmaybe-uninitialized
// inside libstdc++'s regex compiler (std::function in _StateT).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <regex>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "json_schema/json_schema.hpp"

namespace xdpvhost::daemon {

enum TypeBit : std::uint8_t {
  kTypeNull = 1 << 0,
  kTypeBoolean = 1 << 1,
  kTypeObject = 1 << 2,
  kTypeArray = 1 << 3,
  kTypeNumber = 1 << 4,
  kTypeInteger = 1 << 5,
  kTypeString = 1 << 6,
};

class Schema {
 public:
  std::string location;  // absolute "uri#pointer", for messages
  std::string title;     // names the alternative in oneOf/anyOf messages

  // A boolean schema: true accepts everything, false nothing.
  std::optional<bool> constant;

  // $ref, resolved to an absolute "uri#pointer" at compile time, linked later.
  std::string ref;
  const Schema* ref_target = nullptr;

  std::uint8_t types = 0;  // 0: no "type" keyword

  std::optional<nlohmann::json> const_value;
  std::optional<std::vector<nlohmann::json>> enum_values;

  // Objects.
  std::vector<std::pair<std::string, const Schema*>> properties;  // in schema order
  std::map<std::string, const Schema*, std::less<>> property_index;
  std::vector<std::string> required;
  const Schema* additional_properties = nullptr;  // nullptr: anything allowed
  const Schema* property_names = nullptr;
  std::optional<std::size_t> min_properties;
  std::optional<std::size_t> max_properties;

  // Arrays.
  std::vector<const Schema*> prefix_items;
  const Schema* items = nullptr;
  std::optional<std::size_t> min_items;
  std::optional<std::size_t> max_items;
  bool unique_items = false;

  // Numbers (kept as JSON numbers: exact for integers).
  std::optional<nlohmann::json> minimum;
  std::optional<nlohmann::json> maximum;
  std::optional<nlohmann::json> exclusive_minimum;
  std::optional<nlohmann::json> exclusive_maximum;

  // Strings.
  std::optional<std::size_t> min_length;
  std::optional<std::size_t> max_length;
  std::optional<std::regex> pattern;
  std::string pattern_source;

  // Combinations.
  std::vector<const Schema*> all_of;
  std::vector<const Schema*> any_of;
  std::vector<const Schema*> one_of;
  const Schema* not_schema = nullptr;
};

}  // namespace xdpvhost::daemon
