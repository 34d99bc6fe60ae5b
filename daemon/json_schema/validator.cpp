// Validates JSON values against compiled Schema nodes, naming the path of
// every violation.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "json_schema/json_schema.hpp"
#include "json_schema/schema_node.hpp"

namespace xdpvhost::daemon {

using nlohmann::json;

namespace {

constexpr int kMaxDepth = 256;                 // nested evaluations, guards $ref cycles
constexpr std::size_t kShownBranchErrors = 2;  // per alternative in oneOf/anyOf messages
constexpr std::size_t kShownValueChars = 64;

std::string render(const json& value) {
  std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > kShownValueChars) {
    s.resize(kShownValueChars);
    s += "...";
  }
  return s;
}

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    default:
      return "binary";
  }
}

std::string type_names(std::uint8_t types) {
  static constexpr std::pair<std::uint8_t, const char*> kNames[] = {
      {kTypeNull, "null"},     {kTypeBoolean, "boolean"}, {kTypeObject, "object"},
      {kTypeArray, "array"},   {kTypeNumber, "number"},   {kTypeInteger, "integer"},
      {kTypeString, "string"},
  };
  std::string out;
  for (auto [bit, name] : kNames) {
    if (!(types & bit)) continue;
    if (!out.empty()) out += " or ";
    out += name;
  }
  return out;
}

bool is_integral(const json& v) {
  if (v.is_number_integer()) return true;  // also unsigned
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

bool matches_type(std::uint8_t types, const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return types & kTypeNull;
    case json::value_t::boolean:
      return types & kTypeBoolean;
    case json::value_t::object:
      return types & kTypeObject;
    case json::value_t::array:
      return types & kTypeArray;
    case json::value_t::string:
      return types & kTypeString;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return (types & kTypeNumber) || ((types & kTypeInteger) && is_integral(v));
    default:
      return false;
  }
}

// Exact for integers of either sign; doubles otherwise. Returns <0, 0, >0.
int compare_numbers(const json& a, const json& b) {
  if (a.is_number_integer() && b.is_number_integer()) {
    auto wide = [](const json& x) -> __int128 {
      if (x.is_number_unsigned()) return static_cast<__int128>(x.get<std::uint64_t>());
      return static_cast<__int128>(x.get<std::int64_t>());
    };
    __int128 x = wide(a);
    __int128 y = wide(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  long double x = a.get<long double>();
  long double y = b.get<long double>();
  return x < y ? -1 : (x > y ? 1 : 0);
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;
  }
  return n;
}

bool is_identifier(const std::string& key) {
  if (key.empty()) return false;
  for (std::size_t i = 0; i < key.size(); ++i) {
    char c = key[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

std::string json_quoted(const std::string& s) {
  return render(json(s));
}

// How messages name alternative `index` of a oneOf/anyOf: its title, else
// "#1", "#2", ... (appended, not "#" + ...: GCC 12 -O3 sees a false
// -Wrestrict in the inlined concatenation).
std::string alternative_name(const Schema& branch, std::size_t index) {
  if (!branch.title.empty()) return branch.title;
  std::string name = "#";
  name += std::to_string(index + 1);
  return name;
}

class Validator {
 public:
  Validator(std::string root, std::size_t max_errors) : path_(std::move(root)), max_(max_errors) {}

  bool eval(const Schema& s, const json& v, int depth);

  std::vector<SchemaError> errors;

 private:
  bool full() const { return errors.size() >= max_; }
  bool report(std::string message) {
    if (!full()) errors.push_back({path_, std::move(message)});
    return false;
  }
  bool eval_child_key(const Schema& s, const json& v, const std::string& key, int depth) {
    auto saved = path_.size();
    if (is_identifier(key)) {
      if (!path_.empty()) path_ += '.';
      path_ += key;
    } else {
      path_ += '[' + json_quoted(key) + ']';
    }
    bool ok = eval(s, v, depth);
    path_.resize(saved);
    return ok;
  }
  bool eval_child_index(const Schema& s, const json& v, std::size_t index, int depth) {
    auto saved = path_.size();
    path_ += '[' + std::to_string(index) + ']';
    bool ok = eval(s, v, depth);
    path_.resize(saved);
    return ok;
  }
  // Evaluates an alternative on its own: its errors are returned, not kept.
  std::vector<SchemaError> trial(const Schema& s, const json& v, int depth) {
    Validator sub(path_, max_);
    sub.eval(s, v, depth);
    return std::move(sub.errors);
  }
  bool eval_number(const Schema& s, const json& v);
  bool eval_string(const Schema& s, const json& v);
  bool eval_array(const Schema& s, const json& v, int depth);
  bool eval_object(const Schema& s, const json& v, int depth);
  bool eval_alternatives(const Schema& s, const json& v, int depth);
  bool report_no_match(const std::vector<const Schema*>& branches,
                       const std::vector<std::vector<SchemaError>>& results);

  std::string path_;
  std::size_t max_;
};

bool Validator::eval(const Schema& s, const json& v, int depth) {
  if (full()) return false;
  if (depth > kMaxDepth) return report("schema nesting deeper than " + std::to_string(kMaxDepth));
  if (s.constant) return *s.constant ? true : report("no value is allowed here");

  bool ok = true;
  if (!s.ref.empty()) {
    if (!s.ref_target) return report("schema error: unresolved $ref " + s.ref);
    ok = eval(*s.ref_target, v, depth + 1);
  }
  if (s.types && !matches_type(s.types, v)) {
    return report("expected " + type_names(s.types) + ", got " + type_name(v) + " " + render(v));
  }
  if (s.const_value && !(v == *s.const_value)) {
    ok = report(render(v) + " is not " + render(*s.const_value));
  }
  if (s.enum_values) {
    bool found = false;
    for (const auto& e : *s.enum_values) {
      if (v == e) {
        found = true;
        break;
      }
    }
    if (!found) {
      std::string list;
      for (const auto& e : *s.enum_values) list += (list.empty() ? "" : ", ") + render(e);
      ok = report(render(v) + " is not one of " + list);
    }
  }
  if (v.is_number()) ok = eval_number(s, v) && ok;
  if (v.is_string()) ok = eval_string(s, v) && ok;
  if (v.is_array()) ok = eval_array(s, v, depth) && ok;
  if (v.is_object()) ok = eval_object(s, v, depth) && ok;
  for (const Schema* sub : s.all_of) ok = eval(*sub, v, depth + 1) && ok;
  ok = eval_alternatives(s, v, depth) && ok;
  if (s.not_schema && trial(*s.not_schema, v, depth + 1).empty()) {
    ok = report(render(v) + " matches a schema it must not match");
  }
  return ok;
}

bool Validator::eval_number(const Schema& s, const json& v) {
  bool ok = true;
  if (s.minimum && compare_numbers(v, *s.minimum) < 0) {
    ok = report(render(v) + " is below the minimum " + render(*s.minimum));
  }
  if (s.maximum && compare_numbers(v, *s.maximum) > 0) {
    ok = report(render(v) + " is above the maximum " + render(*s.maximum));
  }
  if (s.exclusive_minimum && compare_numbers(v, *s.exclusive_minimum) <= 0) {
    ok = report(render(v) + " is not above the exclusive minimum " + render(*s.exclusive_minimum));
  }
  if (s.exclusive_maximum && compare_numbers(v, *s.exclusive_maximum) >= 0) {
    ok = report(render(v) + " is not below the exclusive maximum " + render(*s.exclusive_maximum));
  }
  return ok;
}

bool Validator::eval_string(const Schema& s, const json& v) {
  const auto& str = v.get_ref<const std::string&>();
  std::size_t len = code_points(str);
  if (s.max_length && len > *s.max_length) {
    // Too long: the pattern is not tried (std::regex recursion grows with length).
    return report("string of " + std::to_string(len) + " characters is longer than the maximum " +
                  std::to_string(*s.max_length));
  }
  bool ok = true;
  if (s.min_length && len < *s.min_length) {
    ok = report(render(v) + " is shorter than the minimum of " + std::to_string(*s.min_length) +
                " characters");
  }
  if (s.pattern) {
    bool matched = false;
    try {
      matched = std::regex_search(str, *s.pattern);
    } catch (const std::regex_error&) {
      return report(render(v) + " could not be matched against " + s.pattern_source);
    }
    if (!matched) ok = report(render(v) + " does not match " + s.pattern_source);
  }
  return ok;
}

bool Validator::eval_array(const Schema& s, const json& v, int depth) {
  bool ok = true;
  if (s.min_items && v.size() < *s.min_items) {
    ok = report(std::to_string(v.size()) + " items, at least " + std::to_string(*s.min_items) +
                " required");
  }
  if (s.max_items && v.size() > *s.max_items) {
    ok = report(std::to_string(v.size()) + " items, at most " + std::to_string(*s.max_items) +
                " allowed");
  }
  if (s.unique_items) {
    bool dup = false;
    for (std::size_t i = 0; i < v.size() && !dup; ++i) {
      for (std::size_t j = i + 1; j < v.size(); ++j) {
        if (v[i] == v[j]) {
          ok = report("items [" + std::to_string(i) + "] and [" + std::to_string(j) +
                      "] are equal (" + render(v[i]) + "), items must be unique");
          dup = true;
          break;
        }
      }
    }
  }
  for (std::size_t i = 0; i < v.size() && !full(); ++i) {
    const Schema* item = i < s.prefix_items.size() ? s.prefix_items[i] : s.items;
    if (item) ok = eval_child_index(*item, v[i], i, depth + 1) && ok;
  }
  return ok;
}

bool Validator::eval_object(const Schema& s, const json& v, int depth) {
  bool ok = true;
  for (const auto& name : s.required) {
    if (!v.contains(name)) ok = report("missing required field " + json_quoted(name));
  }
  if (s.min_properties && v.size() < *s.min_properties) {
    ok = report("has " + std::to_string(v.size()) + " fields, at least " +
                std::to_string(*s.min_properties) + " required");
  }
  if (s.max_properties && v.size() > *s.max_properties) {
    ok = report("has " + std::to_string(v.size()) + " fields, at most " +
                std::to_string(*s.max_properties) + " allowed");
  }
  for (const auto& [key, value] : v.items()) {
    if (full()) break;
    if (s.property_names) {
      auto problems = trial(*s.property_names, json(key), depth + 1);
      if (!problems.empty()) ok = report("field name " + problems.front().message);
    }
    auto it = s.property_index.find(key);
    if (it != s.property_index.end()) {
      ok = eval_child_key(*it->second, value, key, depth + 1) && ok;
    } else if (s.additional_properties) {
      const Schema& extra = *s.additional_properties;
      if (extra.constant && !*extra.constant) {
        ok = report("unknown field " + json_quoted(key));
      } else {
        ok = eval_child_key(extra, value, key, depth + 1) && ok;
      }
    }
  }
  return ok;
}

// No alternative matched. The alternatives with the fewest violations are
// the ones the value was most likely meant for: if there is one, its
// violations are reported as they are (with their own paths); if several
// tie, one message lists each of them by title.
bool Validator::report_no_match(const std::vector<const Schema*>& branches,
                                const std::vector<std::vector<SchemaError>>& results) {
  std::size_t fewest = results.front().size();
  for (const auto& r : results) fewest = std::min(fewest, r.size());
  std::vector<std::size_t> closest;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].size() == fewest) closest.push_back(i);
  }
  if (closest.size() == 1) {
    for (const auto& e : results[closest[0]]) {
      if (!full()) errors.push_back(e);
    }
    return false;
  }
  std::string out = "matches none of the alternatives";
  for (std::size_t n = 0; n < closest.size(); ++n) {
    std::size_t i = closest[n];
    out += n == 0 ? " (" : " | ";
    out += alternative_name(*branches[i], i);
    out += ": ";
    const auto& errs = results[i];
    for (std::size_t k = 0; k < errs.size() && k < kShownBranchErrors; ++k) {
      if (k > 0) out += ", ";
      out += errs[k].path == path_ ? errs[k].message : errs[k].to_string();
    }
    if (errs.size() > kShownBranchErrors) out += ", ...";
  }
  return report(out + ")");
}

bool Validator::eval_alternatives(const Schema& s, const json& v, int depth) {
  bool ok = true;
  if (!s.any_of.empty()) {
    std::vector<std::vector<SchemaError>> results;
    bool any = false;
    for (const Schema* sub : s.any_of) {
      results.push_back(trial(*sub, v, depth + 1));
      if (results.back().empty()) {
        any = true;
        break;
      }
    }
    if (!any) ok = report_no_match(s.any_of, results);
  }
  if (!s.one_of.empty()) {
    std::vector<std::vector<SchemaError>> results;
    std::vector<std::size_t> matched;
    for (std::size_t i = 0; i < s.one_of.size(); ++i) {
      results.push_back(trial(*s.one_of[i], v, depth + 1));
      if (results.back().empty()) matched.push_back(i);
    }
    if (matched.empty()) {
      ok = report_no_match(s.one_of, results);
    } else if (matched.size() > 1) {
      ok = report("matches alternatives " + alternative_name(*s.one_of[matched[0]], matched[0]) +
                  " and " + alternative_name(*s.one_of[matched[1]], matched[1]) +
                  ", exactly one is allowed");
    }
  }
  return ok;
}

}  // namespace

std::vector<SchemaError> validate(const Schema& schema, const json& instance, std::string_view root,
                                  std::size_t max_errors) {
  try {
    Validator validator(std::string(root), max_errors == 0 ? 1 : max_errors);
    validator.eval(schema, instance, 0);
    return std::move(validator.errors);
  } catch (const std::exception& e) {
    return {{std::string(root), std::string("validation failed: ") + e.what()}};
  }
}

}  // namespace xdpvhost::daemon
