#pragma once
// The Internet checksum (RFC 1071): ones-complement sums over contiguous or
// scattered bytes, the TCP/UDP pseudo-header sums for IPv4 and IPv6, and the
// IPv4 header checksum.
//
// Convention: a sum is a host integer holding the ones-complement sum of the
// bytes read as big-endian 16-bit words (an odd last byte is the high byte of
// a word padded with zero). Functions return sums folded to 16 bits
// (0..0xffff), so sums can be chained and combined with checksum_add(). The
// value to store in a checksum field is checksum_finish(sum), written with
// store_be16().

#include <cstdint>

#include "net/byte_spans.hpp"

namespace xdpvhost::net {

// Folds a wide sum to 16 bits with end-around carries.
std::uint32_t checksum_fold(std::uint64_t sum) noexcept;

// a + b in ones-complement arithmetic (both already folded or small).
inline std::uint32_t checksum_add(std::uint32_t a, std::uint32_t b) noexcept {
  return checksum_fold(std::uint64_t{a} + b);
}

// The sum of `len` contiguous bytes added to `sum`.
std::uint32_t checksum_bytes(const std::uint8_t* data, std::uint32_t len,
                             std::uint32_t sum = 0) noexcept;

// The sum of [offset, offset + len) of a scattered frame added to `sum`, as
// if the range were contiguous (pieces that start at an odd position of the
// range are swapped into place). Bytes beyond the frame's end are not read.
std::uint32_t checksum_spans(const ByteSpans& frame, std::uint32_t offset, std::uint32_t len,
                             std::uint32_t sum = 0) noexcept;

// The value for a checksum field: the complement of the folded sum.
inline std::uint16_t checksum_finish(std::uint32_t sum) noexcept {
  return static_cast<std::uint16_t>(~checksum_fold(sum));
}

// Pseudo-header sums (RFC 793/768 for IPv4, RFC 8200 section 8.1 for IPv6):
// source and destination address, protocol and L4 length. `addresses` points
// at the source address; the destination follows it (as in both headers).
std::uint32_t pseudo_header_sum_ipv4(const std::uint8_t* addresses, std::uint8_t protocol,
                                     std::uint32_t l4_len) noexcept;
std::uint32_t pseudo_header_sum_ipv6(const std::uint8_t* addresses, std::uint8_t protocol,
                                     std::uint32_t l4_len) noexcept;

// The IPv4 header checksum of `header_len` bytes at `header`, taking the
// checksum field (bytes 10-11) as zero: the value to store there.
std::uint16_t ipv4_header_checksum(const std::uint8_t* header, std::uint32_t header_len) noexcept;

}  // namespace xdpvhost::net
