#pragma once
// One table per enum for its names: each value's name (a counter, a config
// word, a JSON field) written once, looked up both ways. Tables of enums
// numbered from 0 are kept in the enum's order, which `in_enum_order` checks
// at compile time, so that a value added to the enum without a name fails
// the build as a switch without its case would.

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace xdpvhost::sys {

template <class E>
struct EnumName {
  E value;
  const char* name;
};

template <class E, std::size_t N>
using EnumNames = std::array<EnumName<E>, N>;

// `count` rows, row i naming value i: every value of an enum numbered 0 to
// count - 1, each once.
template <class E, std::size_t N>
constexpr bool in_enum_order(const EnumNames<E, N>& table, std::size_t count) noexcept {
  if (N != count) return false;
  for (std::size_t i = 0; i < N; ++i)
    if (static_cast<std::size_t>(table[i].value) != i) return false;
  return true;
}

// The name of `value`, `otherwise` if the table has none (a value cast from
// a number out of range).
template <class E, std::size_t N>
constexpr const char* name_of(const EnumNames<E, N>& table, E value,
                              const char* otherwise = "unknown") noexcept {
  const auto i = static_cast<std::size_t>(value);
  if (i < N && table[i].value == value) return table[i].name;  // a table in the enum's order
  for (const auto& row : table)
    if (row.value == value) return row.name;
  return otherwise;
}

// The value named `name`, in the table or among its aliases (older or
// other spellings that are read but never written).
template <class E, std::size_t N, std::size_t A = 0>
constexpr std::optional<E> value_named(const EnumNames<E, N>& table, std::string_view name,
                                       const EnumNames<E, A>& aliases = {}) noexcept {
  for (const auto& row : table)
    if (name == row.name) return row.value;
  for (const auto& row : aliases)
    if (name == row.name) return row.value;
  return std::nullopt;
}

}  // namespace xdpvhost::sys
