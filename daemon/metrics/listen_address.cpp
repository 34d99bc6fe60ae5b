#include "listen_address.hpp"

#include <fmt/format.h>

namespace xdpvhost::daemon::metrics {

std::optional<ListenAddress> parse_listen_address(std::string_view text, std::string& error) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    error = fmt::format("\"{}\" is not host:port", text);
    return std::nullopt;
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') {
      error = fmt::format("\"{}\": an IPv6 address goes in brackets, [::1]:9477", text);
      return std::nullopt;
    }
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    error = fmt::format("\"{}\": put an IPv6 address in brackets, [::1]:9477", text);
    return std::nullopt;
  }
  unsigned long value = 0;
  if (port.empty() || port.size() > 5)
    value = 0;
  else
    for (char c : port) value = (c >= '0' && c <= '9') ? value * 10 + (c - '0') : 100000;
  if (value == 0 || value > 65535) {
    error = fmt::format("\"{}\": port must be 1-65535", text);
    return std::nullopt;
  }
  return ListenAddress{std::string(host), static_cast<std::uint16_t>(value)};
}

}  // namespace xdpvhost::daemon::metrics
