#pragma once
// Events a misbehaving or flapping peer can repeat without end (broken rings,
// failed messages, reconnects, refused clients) are logged at the first ten
// occurrences, then at every power of ten (100th, 1000th, ...): the log shows
// that it goes on, and how often, without being flooded.

#include <cstdint>

namespace xdpvhost::sys {

// `n` counts the occurrences so far, this one included (1 for the first).
constexpr bool worth_logging(std::uint64_t n) noexcept {
  if (n <= 10) return n != 0;
  while (n % 10 == 0) n /= 10;
  return n == 1;
}

}  // namespace xdpvhost::sys
