#pragma once
// An Ethernet MAC address.

#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace xdpvhost::dataplane {

struct MacAddress {
  std::array<std::uint8_t, 6> bytes{};

  static MacAddress from(const std::uint8_t* p) {
    MacAddress m;
    for (int i = 0; i < 6; ++i) m.bytes[i] = p[i];
    return m;
  }
  // "52:54:00:00:00:01" (case-insensitive); nullopt if malformed.
  static std::optional<MacAddress> parse(std::string_view text) {
    if (text.size() != 17) return std::nullopt;
    MacAddress m;
    for (int i = 0; i < 6; ++i) {
      auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
      };
      const int hi = hex(text[3 * i]), lo = hex(text[3 * i + 1]);
      if (hi < 0 || lo < 0 || (i < 5 && text[3 * i + 2] != ':')) return std::nullopt;
      m.bytes[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return m;
  }

  std::uint64_t key() const noexcept {
    std::uint64_t k = 0;
    for (auto b : bytes) k = k << 8 | b;
    return k;
  }
  bool is_multicast() const noexcept { return (bytes[0] & 1) != 0; }  // includes broadcast
  bool operator==(const MacAddress&) const = default;

  std::string to_string() const {
    char buf[18];
    std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1], bytes[2],
                  bytes[3], bytes[4], bytes[5]);
    return buf;
  }
};

}  // namespace xdpvhost::dataplane
