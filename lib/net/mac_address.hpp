#pragma once
// An Ethernet MAC address: the one type the config, the switch, the XDP
// program's guest_macs map and the netlink calls all use.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xdpvhost::net {

struct MacAddress {
  std::array<std::uint8_t, 6> bytes{};

  // The six bytes at `p` (a frame's destination or source field).
  static MacAddress from(const std::uint8_t* p) noexcept {
    MacAddress m;
    for (std::size_t i = 0; i < m.bytes.size(); ++i) m.bytes[i] = p[i];
    return m;
  }
  // "aa:bb:cc:dd:ee:ff" (hex, either case, ':' or '-' as the one separator);
  // nullopt otherwise.
  static std::optional<MacAddress> parse(std::string_view text) noexcept;

  // Lower case, colon-separated.
  std::string to_string() const;

  const std::uint8_t* data() const noexcept { return bytes.data(); }
  // The group bit: multicast, broadcast included.
  bool is_multicast() const noexcept { return (bytes[0] & 1) != 0; }
  bool is_zero() const noexcept { return key() == 0; }
  // The address as a 48-bit number, for hashing and ordered maps.
  std::uint64_t key() const noexcept {
    std::uint64_t k = 0;
    for (auto b : bytes) k = k << 8 | b;
    return k;
  }
  bool operator==(const MacAddress&) const = default;
  auto operator<=>(const MacAddress&) const = default;
};

}  // namespace xdpvhost::net
