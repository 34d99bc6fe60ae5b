#pragma once
// A 6-byte Ethernet address as the XDP program's guest_macs map and the
// netlink calls take it, with text conversion for configs and reports.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xdpvhost::xsk {

using MacAddress = std::array<std::uint8_t, 6>;

// Parses "aa:bb:cc:dd:ee:ff" (hex, case-insensitive, ':' or '-' separators).
std::optional<MacAddress> parse_mac(std::string_view text);

// Lower-case "aa:bb:cc:dd:ee:ff".
std::string to_string(const MacAddress& mac);

constexpr bool is_multicast(const MacAddress& mac) {
  return (mac[0] & 1) != 0;
}

}  // namespace xdpvhost::xsk
