#pragma once
// Reads a fuzzer's input front to back as small integers and byte strings;
// past the end everything reads as zero, so every input decodes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

// On a harness helper that is not code under test (a reference checksum, a
// scan of the inputs' own bookkeeping): no coverage instrumentation, so its
// loops do not call a trace-cmp hook per iteration nor add features that
// steer the fuzzer; AddressSanitizer still checks it. (clang only: gcc
// builds the replay drivers, without coverage anyway.)
#if defined(__clang__)
#define XDPVHOST_FUZZ_HELPER __attribute__((no_sanitize("coverage")))
#else
#define XDPVHOST_FUZZ_HELPER
#endif

namespace xdpvhost::fuzz {

class FuzzBytes {
 public:
  FuzzBytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  bool empty() const noexcept { return pos_ >= size_; }
  std::size_t remaining() const noexcept { return empty() ? 0 : size_ - pos_; }

  std::uint8_t u8() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }
  std::uint16_t u16() noexcept { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() noexcept { return u16() | (std::uint32_t{u16()} << 16); }
  std::uint64_t u64() noexcept { return u32() | (std::uint64_t{u32()} << 32); }

  // Up to `n` bytes (fewer at the end of the input).
  std::span<const std::uint8_t> take(std::size_t n) noexcept {
    const std::size_t k = std::min(n, remaining());
    std::span<const std::uint8_t> out(data_ + pos_, k);
    pos_ += k;
    return out;
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
};

}  // namespace xdpvhost::fuzz
