#include "net/internet_checksum.hpp"

#include <bit>
#include <cstring>

namespace xdpvhost::net {
namespace {

// Adds with end-around carry: the ones-complement sum of 64-bit words is
// congruent (mod 0xffff) to the sum of their 16-bit words.
inline std::uint64_t add_carry(std::uint64_t sum, std::uint64_t w) noexcept {
  std::uint64_t out;
  if (__builtin_add_overflow(sum, w, &out)) ++out;
  return out;
}

// The sum of the bytes as native 16-bit words as they lie in memory, folded.
// On a little-endian machine that is the byte-swapped big-endian sum
// (RFC 1071 section 2(B)).
std::uint32_t native_sum(const std::uint8_t* p, std::uint32_t len) noexcept {
  std::uint64_t sum = 0;
  while (len >= 32) {
    std::uint64_t w[4];
    std::memcpy(w, p, 32);
    sum = add_carry(sum, w[0]);
    sum = add_carry(sum, w[1]);
    sum = add_carry(sum, w[2]);
    sum = add_carry(sum, w[3]);
    p += 32;
    len -= 32;
  }
  while (len >= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    sum = add_carry(sum, w);
    p += 8;
    len -= 8;
  }
  // The last 0..7 bytes, zero padded to a word in memory (either byte order).
  std::uint64_t tail = 0;
  std::memcpy(&tail, p, len);
  sum = add_carry(sum, tail);
  return checksum_fold(sum);
}

inline std::uint32_t swap16(std::uint32_t v) noexcept {
  return ((v & 0xff) << 8) | ((v >> 8) & 0xff);
}

}  // namespace

std::uint32_t checksum_fold(std::uint64_t sum) noexcept {
  sum = (sum & 0xffffffffu) + (sum >> 32);
  sum = (sum & 0xffffffffu) + (sum >> 32);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint32_t>(sum);
}

std::uint32_t checksum_bytes(const std::uint8_t* data, std::uint32_t len,
                             std::uint32_t sum) noexcept {
  std::uint32_t s = native_sum(data, len);
  if constexpr (std::endian::native == std::endian::little) s = swap16(s);
  return checksum_add(sum, s);
}

std::uint32_t checksum_spans(const ByteSpans& frame, std::uint32_t offset, std::uint32_t len,
                             std::uint32_t sum) noexcept {
  SpanCursor cursor(frame, offset);
  if (cursor.position() != offset) return sum;
  std::uint32_t done = 0;
  while (done < len) {
    const ByteSpan piece = cursor.next(len - done);
    if (piece.len == 0) break;
    std::uint32_t s = checksum_bytes(piece.data, piece.len);
    // A piece at an odd position of the range: its first byte is the low
    // byte of a word, so its sum is byte-swapped (RFC 1071 section 2(B)).
    if (done & 1u) s = swap16(s);
    sum = checksum_add(sum, s);
    done += piece.len;
  }
  return sum;
}

std::uint32_t pseudo_header_sum_ipv4(const std::uint8_t* addresses, std::uint8_t protocol,
                                     std::uint32_t l4_len) noexcept {
  std::uint32_t sum = checksum_bytes(addresses, 8);
  return checksum_fold(std::uint64_t{sum} + protocol + l4_len);
}

std::uint32_t pseudo_header_sum_ipv6(const std::uint8_t* addresses, std::uint8_t protocol,
                                     std::uint32_t l4_len) noexcept {
  std::uint32_t sum = checksum_bytes(addresses, 32);
  return checksum_fold(std::uint64_t{sum} + protocol + (l4_len >> 16) + (l4_len & 0xffff));
}

std::uint16_t ipv4_header_checksum(const std::uint8_t* header, std::uint32_t header_len) noexcept {
  if (header_len < 12) return checksum_finish(checksum_bytes(header, header_len));
  std::uint32_t sum = checksum_bytes(header, 10);
  sum = checksum_bytes(header + 12, header_len - 12, sum);
  return checksum_finish(sum);
}

}  // namespace xdpvhost::net
