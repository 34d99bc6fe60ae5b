#pragma once
// How an AF_XDP socket binds: zero-copy, copy, or zero-copy with a fall back
// to copy (auto).

#include <cstdint>
#include <optional>
#include <string_view>

#include "sys/enum_names.hpp"

namespace xdpvhost::xsk {

enum class BindMode : std::uint8_t { kAuto, kZeroCopy, kCopy };

// "auto" / "zerocopy" / "copy": the config file's and the control protocol's
// spelling ("zero-copy" is read too).
inline constexpr sys::EnumNames<BindMode, 3> kBindModeNames{{
    {BindMode::kAuto, "auto"},
    {BindMode::kZeroCopy, "zerocopy"},
    {BindMode::kCopy, "copy"},
}};
static_assert(sys::in_enum_order(kBindModeNames, 3));
inline constexpr sys::EnumNames<BindMode, 1> kBindModeAliases{{{BindMode::kZeroCopy, "zero-copy"}}};

constexpr const char* to_string(BindMode mode) noexcept {
  return sys::name_of(kBindModeNames, mode, "auto");
}
constexpr std::optional<BindMode> parse_bind_mode(std::string_view text) noexcept {
  return sys::value_named(kBindModeNames, text, kBindModeAliases);
}

}  // namespace xdpvhost::xsk
