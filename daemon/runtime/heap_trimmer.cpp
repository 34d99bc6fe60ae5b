#include "runtime/heap_trimmer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "sys/heap_policy.hpp"
#include "sys/resource_ledger.hpp"

namespace xdpvhost::daemon {

void HeapTrimmer::start() {
  arm();
}

void HeapTrimmer::arm() {
  timer_.expires_after(kHeapCheckInterval);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    tick();
    arm();
  });
}

bool HeapTrimmer::tick() {
  const sys::HeapBytes now = sys::heap_bytes();
  peak_in_use_ = std::max(peak_in_use_, now.in_use);
  ++checks_since_trim_;
  const std::uint64_t fell = peak_in_use_ - now.in_use;
  if (now.free < kHeapTrimAbove || (fell < kHeapGaveBack && checks_since_trim_ < kHeapTrimEvery))
    return false;

  peak_in_use_ = now.in_use;
  checks_since_trim_ = 0;
  const auto start = std::chrono::steady_clock::now();
  if (!sys::give_back_free_heap()) return false;
  ++trims_;
  spdlog::debug(
      "heap: the free pages of its {} KiB free handed back to the kernel in {} us ({} KiB in use, "
      "{} KiB below its peak since the last trim)",
      now.free >> 10,
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                            start)
          .count(),
      now.in_use >> 10, fell >> 10);
  return true;
}

}  // namespace xdpvhost::daemon
