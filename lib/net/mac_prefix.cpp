#include "net/mac_prefix.hpp"

#include <charconv>

namespace xdpvhost::net {

std::optional<MacPrefix> MacPrefix::parse(std::string_view text) noexcept {
  const std::size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  const auto address = MacAddress::parse(text.substr(0, slash));
  const std::string_view length = text.substr(slash + 1);
  unsigned bits = 0;
  const auto [end, ec] = std::from_chars(length.data(), length.data() + length.size(), bits);
  if (!address || ec != std::errc{} || end != length.data() + length.size() || length.empty() ||
      bits < 1 || bits > 48)
    return std::nullopt;
  MacPrefix prefix{*address, static_cast<std::uint8_t>(bits)};
  if (!prefix.contains(*address)) return std::nullopt;  // a bit set past the length
  return prefix;
}

std::string MacPrefix::to_string() const {
  return address.to_string() + "/" + std::to_string(bits);
}

}  // namespace xdpvhost::net
