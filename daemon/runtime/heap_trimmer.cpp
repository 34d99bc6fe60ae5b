#include "runtime/heap_trimmer.hpp"

#include <spdlog/spdlog.h>

#include "sys/heap_policy.hpp"
#include "sys/resource_ledger.hpp"

namespace xdpvhost::daemon {

void HeapTrimmer::start() {
  arm();
}

void HeapTrimmer::arm() {
  timer_.expires_after(kHeapTrimInterval);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    tick();
    arm();
  });
}

bool HeapTrimmer::tick() {
  const sys::HeapBytes before = sys::heap_bytes();
  if (before.free < kHeapTrimAbove) return false;
  const auto start = std::chrono::steady_clock::now();
  if (!sys::give_back_free_heap()) return false;
  ++trims_;
  spdlog::debug(
      "heap: free pages of {} KiB free handed back to the kernel in {} us ({} KiB in use)",
      before.free >> 10,
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() -
                                                            start)
          .count(),
      before.in_use >> 10);
  return true;
}

}  // namespace xdpvhost::daemon
