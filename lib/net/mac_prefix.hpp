#pragma once
// A range of MAC addresses given by its leading bits, "52:54:00:00:00:00/24"
// (what a MAC pool such as KubeVirt's hands out, or a vendor's OUI): the
// MACs guests may learn when mac_learning.prefixes lists any.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "net/mac_address.hpp"

namespace xdpvhost::net {

struct MacPrefix {
  MacAddress address;     // the bits past `bits` are zero
  std::uint8_t bits = 0;  // 1..48

  // "aa:bb:cc:00:00:00/24": an address, '/', a length of 1 to 48 bits, and
  // no bit set past the length; nullopt otherwise.
  static std::optional<MacPrefix> parse(std::string_view text) noexcept;

  bool contains(const MacAddress& mac) const noexcept {
    const std::uint64_t mask = ~std::uint64_t{0} << (48 - bits) & 0xffff'ffff'ffffULL;
    return (mac.key() & mask) == address.key();
  }
  std::string to_string() const;  // as parse() takes it, lower case
  bool operator==(const MacPrefix&) const = default;
};

}  // namespace xdpvhost::net
