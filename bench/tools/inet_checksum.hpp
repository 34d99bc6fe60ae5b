#pragma once
// The Internet checksum (RFC 1071) over a byte range, optionally continuing
// a partial sum (for the UDP pseudo header).

#include <cstddef>
#include <cstdint>

namespace xdpvhost::bench {

inline std::uint32_t checksum_add(std::uint32_t sum, const std::uint8_t* data, std::size_t len) {
  for (std::size_t i = 0; i + 1 < len; i += 2)
    sum += static_cast<std::uint32_t>(data[i] << 8 | data[i + 1]);
  if (len & 1) sum += static_cast<std::uint32_t>(data[len - 1] << 8);
  return sum;
}

inline std::uint16_t checksum_fold(std::uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(~sum & 0xffff);
}

}  // namespace xdpvhost::bench
