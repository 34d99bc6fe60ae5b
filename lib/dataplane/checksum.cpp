#include "dataplane/checksum.hpp"

#include <cstring>

namespace xdpvhost::dataplane {

std::uint64_t checksum_add(const std::uint8_t* data, std::uint32_t len,
                           std::uint64_t sum) noexcept {
  // Sum 32-bit words in host order into 64 bits; the byte order of the
  // result is fixed up by the caller's byte-wise folding below (RFC 1071:
  // the sum is byte-order independent when folded and stored the same way).
  while (len >= 4) {
    std::uint32_t w;
    std::memcpy(&w, data, 4);
    sum += w;
    data += 4;
    len -= 4;
  }
  if (len >= 2) {
    std::uint16_t w;
    std::memcpy(&w, data, 2);
    sum += w;
    data += 2;
    len -= 2;
  }
  if (len == 1) sum += data[0];  // little endian: odd byte is the low byte
  return sum;
}

std::uint16_t checksum_fold(std::uint64_t sum) noexcept {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<std::uint16_t>(sum);
}

std::uint64_t checksum_add(const Frame& frame, std::uint32_t offset, std::uint32_t len) noexcept {
  std::uint64_t sum = 0;
  bool odd = false;  // the summed range so far has odd length: next byte is a high byte
  for (std::uint32_t i = 0; i < frame.span_count && len > 0; ++i) {
    const Span& s = frame.spans[i];
    if (offset >= s.len) {
      offset -= s.len;
      continue;
    }
    std::uint32_t take = s.len - offset;
    if (take > len) take = len;
    const std::uint8_t* p = s.data + offset;
    std::uint32_t n = take;
    if (odd) {  // finish the 16-bit word begun in the previous span
      sum += static_cast<std::uint64_t>(p[0]) << 8;
      ++p;
      --n;
      odd = false;
    }
    sum = checksum_add(p, n & ~1u, sum);
    if (n & 1u) {
      sum += p[n - 1];
      odd = true;
    }
    len -= take;
    offset = 0;
  }
  return sum;
}

bool complete_checksum(const Frame& frame, std::uint16_t& value) noexcept {
  const std::uint32_t start = frame.offload.csum.start;
  const std::uint32_t field = start + frame.offload.csum.offset;
  if (start >= frame.len || field + 2 > frame.len) return false;
  value = static_cast<std::uint16_t>(~checksum_fold(checksum_add(frame, start, frame.len - start)));
  // RFC 768: a computed UDP checksum of zero is sent as all ones; for TCP the
  // two are equivalent, so this is always safe.
  if (value == 0) value = 0xffff;
  return true;
}

}  // namespace xdpvhost::dataplane
