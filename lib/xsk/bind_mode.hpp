#pragma once
// How an AF_XDP socket binds: zero-copy, copy, or zero-copy with a fall back
// to copy (auto).

#include <cstdint>
#include <optional>
#include <string_view>

namespace xdpvhost::xsk {

enum class BindMode : std::uint8_t { kAuto, kZeroCopy, kCopy };

// "auto" / "zerocopy" / "copy": the config file's and the control protocol's
// spelling ("zero-copy" is read too).
constexpr const char* to_string(BindMode mode) noexcept {
  switch (mode) {
    case BindMode::kAuto:
      return "auto";
    case BindMode::kZeroCopy:
      return "zerocopy";
    case BindMode::kCopy:
      return "copy";
  }
  return "auto";
}
constexpr std::optional<BindMode> parse_bind_mode(std::string_view text) noexcept {
  if (text == "auto") return BindMode::kAuto;
  if (text == "zerocopy" || text == "zero-copy") return BindMode::kZeroCopy;
  if (text == "copy") return BindMode::kCopy;
  return std::nullopt;
}

}  // namespace xdpvhost::xsk
