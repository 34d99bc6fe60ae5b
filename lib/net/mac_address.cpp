#include "net/mac_address.hpp"

#include <cstdio>

namespace xdpvhost::net {

namespace {

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::optional<MacAddress> MacAddress::parse(std::string_view text) noexcept {
  if (text.size() != 17) return std::nullopt;
  const char sep = text[2];
  if (sep != ':' && sep != '-') return std::nullopt;
  MacAddress mac;
  for (std::size_t i = 0; i < 6; ++i) {
    const int hi = hex_value(text[i * 3]);
    const int lo = hex_value(text[i * 3 + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    if (i < 5 && text[i * 3 + 2] != sep) return std::nullopt;
    mac.bytes[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return mac;
}

std::string MacAddress::to_string() const {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1], bytes[2],
                bytes[3], bytes[4], bytes[5]);
  return buf;
}

}  // namespace xdpvhost::net
