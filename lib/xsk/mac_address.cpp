#include "xsk/mac_address.hpp"

#include <cstdio>

namespace xdpvhost::xsk {

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::optional<MacAddress> parse_mac(std::string_view text) {
  if (text.size() != 17) return std::nullopt;
  MacAddress mac{};
  const char sep = text[2];
  if (sep != ':' && sep != '-') return std::nullopt;
  for (int i = 0; i < 6; ++i) {
    const int hi = hex_value(text[i * 3]);
    const int lo = hex_value(text[i * 3 + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    if (i < 5 && text[i * 3 + 2] != sep) return std::nullopt;
    mac[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return mac;
}

std::string to_string(const MacAddress& mac) {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return buf;
}

}  // namespace xdpvhost::xsk
