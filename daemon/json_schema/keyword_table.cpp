#include "json_schema/keyword_table.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "json_schema/schema_compiler.hpp"
#include "json_schema/schema_uri.hpp"

namespace xdpvhost::daemon::json_schema {
namespace {

using nlohmann::json;
using K = Keyword;

constexpr std::string_view kDraft202012 = "https://json-schema.org/draft/2020-12/schema";

bool fail(const K& k, const std::string& what) {
  return k.compiler.fail(k.pointer, what);
}

std::string quoted(const std::string& name) {
  return "\"" + name + "\"";
}

bool is_count(const json& j) {
  return j.is_number_unsigned() || (j.is_number_integer() && j.get<std::int64_t>() >= 0);
}

// Annotations: checked, then ignored (but for the title, which names an
// alternative in oneOf/anyOf messages).

bool compile_schema_dialect(const K& k) {
  if (!k.pointer.empty()) return fail(k, "\"$schema\" is only allowed at the document root");
  if (!k.value.is_string() || k.value.get<std::string>() != kDraft202012) {
    return fail(k, "\"$schema\" must be " + std::string(kDraft202012));
  }
  return true;
}

bool compile_id(const K& k) {
  if (!k.pointer.empty()) return fail(k, "\"$id\" is only supported at the document root");
  return true;  // checked by SchemaSet::add
}

bool compile_string_annotation(const K& k) {
  if (!k.value.is_string()) return fail(k, quoted(k.name) + " must be a string");
  return true;
}

bool compile_title(const K& k) {
  if (!compile_string_annotation(k)) return false;
  k.schema.title = k.value.get<std::string>();
  return true;
}

bool compile_any_annotation(const K&) {
  return true;
}

bool compile_examples(const K& k) {
  if (!k.value.is_array()) return fail(k, "\"examples\" must be an array");
  return true;
}

bool compile_boolean_annotation(const K& k) {
  if (!k.value.is_boolean()) return fail(k, quoted(k.name) + " must be a boolean");
  return true;
}

// Structure.

bool compile_defs(const K& k) {
  if (!k.value.is_object()) return fail(k, "\"$defs\" must be an object");
  for (const auto& [name, sub] : k.value.items()) {
    if (!k.compiler.compile(sub, k.here + "/" + escape_pointer_token(name))) return false;
  }
  return true;
}

bool compile_ref(const K& k) {
  if (!k.value.is_string()) return fail(k, "\"$ref\" must be a string");
  const auto& ref = k.value.get_ref<const std::string&>();
  auto hash = ref.find('#');
  if (hash != std::string::npos && hash + 1 < ref.size() && ref[hash + 1] != '/') {
    return fail(k, "\"$ref\" " + ref + ": only JSON pointer fragments are supported");
  }
  k.schema.ref = resolve_reference(k.compiler.document_id(), ref);
  return true;
}

// A keyword whose value is one schema (additionalProperties, items, not, ...).
template <const Schema* Schema::*Slot>
bool compile_subschema(const K& k) {
  k.schema.*Slot = k.compiler.compile(k.value, k.here);
  return k.schema.*Slot != nullptr;
}

// A keyword whose value is a non-empty array of schemas (allOf, prefixItems, ...).
template <std::vector<const Schema*> Schema::*Slot>
bool compile_schema_list(const K& k) {
  if (!k.value.is_array() || k.value.empty()) {
    return fail(k, quoted(k.name) + " must be a non-empty array of schemas");
  }
  for (std::size_t i = 0; i < k.value.size(); ++i) {
    const Schema* sub = k.compiler.compile(k.value[i], k.here + "/" + std::to_string(i));
    if (!sub) return false;
    (k.schema.*Slot).push_back(sub);
  }
  return true;
}

// A keyword whose value is a count (minLength, maxItems, ...).
template <std::optional<std::size_t> Schema::*Slot>
bool compile_count(const K& k) {
  if (!is_count(k.value)) return fail(k, quoted(k.name) + " must be a non-negative integer");
  k.schema.*Slot = k.value.get<std::size_t>();
  return true;
}

// Any instance.

bool compile_type(const K& k) {
  std::vector<std::string> names;
  if (k.value.is_string()) {
    names.push_back(k.value.get<std::string>());
  } else if (k.value.is_array() && !k.value.empty()) {
    for (const auto& n : k.value) {
      if (!n.is_string()) return fail(k, "\"type\" entries must be strings");
      names.push_back(n.get<std::string>());
    }
  } else {
    return fail(k, "\"type\" must be a string or a non-empty array of strings");
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
    if (bit == 0) return fail(k, "unknown type \"" + n + "\"");
    if (k.schema.types & bit) return fail(k, "type \"" + n + "\" listed twice");
    k.schema.types |= bit;
  }
  return true;
}

bool compile_enum(const K& k) {
  if (!k.value.is_array() || k.value.empty()) return fail(k, "\"enum\" must be a non-empty array");
  k.schema.enum_values = std::vector<json>(k.value.begin(), k.value.end());
  return true;
}

bool compile_const(const K& k) {
  k.schema.const_value = k.value;
  return true;
}

// Objects.

bool compile_properties(const K& k) {
  if (!k.value.is_object()) return fail(k, "\"properties\" must be an object");
  for (const auto& [name, sub] : k.value.items()) {
    const Schema* p = k.compiler.compile(sub, k.here + "/" + escape_pointer_token(name));
    if (!p) return false;
    k.schema.properties.emplace_back(name, p);
    k.schema.property_index[name] = p;
  }
  return true;
}

bool compile_required(const K& k) {
  if (!k.value.is_array()) return fail(k, "\"required\" must be an array of strings");
  std::set<std::string> seen;
  for (const auto& n : k.value) {
    if (!n.is_string()) return fail(k, "\"required\" must be an array of strings");
    if (!seen.insert(n.get<std::string>()).second) {
      return fail(k, "\"required\" lists \"" + n.get<std::string>() + "\" twice");
    }
    k.schema.required.push_back(n.get<std::string>());
  }
  return true;
}

// Arrays.

bool compile_unique_items(const K& k) {
  if (!k.value.is_boolean()) return fail(k, "\"uniqueItems\" must be a boolean");
  k.schema.unique_items = k.value.get<bool>();
  return true;
}

// Numbers: kept as JSON numbers, exact for integers.
template <std::optional<json> Schema::*Slot>
bool compile_bound(const K& k) {
  if (!k.value.is_number()) return fail(k, quoted(k.name) + " must be a number");
  k.schema.*Slot = k.value;
  return true;
}

// Strings.

bool compile_pattern(const K& k) {
  if (!k.value.is_string()) return fail(k, "\"pattern\" must be a string");
  Schema& s = k.schema;
  s.pattern_source = k.value.get<std::string>();
  try {
    s.pattern.emplace(s.pattern_source, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return fail(k, "\"pattern\" " + s.pattern_source + " is not a valid regex: " + e.what());
  }
  return true;  // Compiler::compile checks the maxLength that must come with it
}

using S = Schema;

constexpr std::array kTable = {
    // Annotations.
    KeywordSpec{"$schema", &compile_schema_dialect},
    KeywordSpec{"$id", &compile_id},
    KeywordSpec{"$comment", &compile_string_annotation},
    KeywordSpec{"description", &compile_string_annotation},
    KeywordSpec{"title", &compile_title},
    KeywordSpec{"default", &compile_any_annotation},
    KeywordSpec{"examples", &compile_examples},
    KeywordSpec{"deprecated", &compile_boolean_annotation},
    KeywordSpec{"readOnly", &compile_boolean_annotation},
    KeywordSpec{"writeOnly", &compile_boolean_annotation},
    // Structure.
    KeywordSpec{"$defs", &compile_defs},
    KeywordSpec{"$ref", &compile_ref},
    // Any instance.
    KeywordSpec{"type", &compile_type},
    KeywordSpec{"enum", &compile_enum},
    KeywordSpec{"const", &compile_const},
    KeywordSpec{"allOf", &compile_schema_list<&S::all_of>},
    KeywordSpec{"anyOf", &compile_schema_list<&S::any_of>},
    KeywordSpec{"oneOf", &compile_schema_list<&S::one_of>},
    KeywordSpec{"not", &compile_subschema<&S::not_schema>},
    // Objects.
    KeywordSpec{"properties", &compile_properties},
    KeywordSpec{"required", &compile_required},
    KeywordSpec{"additionalProperties", &compile_subschema<&S::additional_properties>},
    KeywordSpec{"propertyNames", &compile_subschema<&S::property_names>},
    KeywordSpec{"minProperties", &compile_count<&S::min_properties>},
    KeywordSpec{"maxProperties", &compile_count<&S::max_properties>},
    // Arrays.
    KeywordSpec{"items", &compile_subschema<&S::items>},
    KeywordSpec{"prefixItems", &compile_schema_list<&S::prefix_items>},
    KeywordSpec{"minItems", &compile_count<&S::min_items>},
    KeywordSpec{"maxItems", &compile_count<&S::max_items>},
    KeywordSpec{"uniqueItems", &compile_unique_items},
    // Numbers.
    KeywordSpec{"minimum", &compile_bound<&S::minimum>},
    KeywordSpec{"maximum", &compile_bound<&S::maximum>},
    KeywordSpec{"exclusiveMinimum", &compile_bound<&S::exclusive_minimum>},
    KeywordSpec{"exclusiveMaximum", &compile_bound<&S::exclusive_maximum>},
    // Strings.
    KeywordSpec{"minLength", &compile_count<&S::min_length>},
    KeywordSpec{"maxLength", &compile_count<&S::max_length>},
    KeywordSpec{"pattern", &compile_pattern},
};

constexpr bool each_name_once() {
  for (std::size_t i = 0; i < kTable.size(); ++i)
    for (std::size_t j = i + 1; j < kTable.size(); ++j)
      if (kTable[i].name == kTable[j].name) return false;
  return true;
}
static_assert(each_name_once(), "a keyword is listed twice in the keyword table");

}  // namespace

const KeywordSpec* find_keyword(std::string_view name) noexcept {
  for (const auto& spec : kTable)
    if (spec.name == name) return &spec;
  return nullptr;
}

}  // namespace xdpvhost::daemon::json_schema
