#include "sys/cpu_budget.hpp"

#include <time.h>

namespace xdpvhost::sys {

std::chrono::nanoseconds thread_cpu_time() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

namespace {
thread_local std::chrono::nanoseconds blocked{0};
}  // namespace

std::chrono::nanoseconds thread_blocked_time() noexcept {
  return blocked;
}

void add_thread_blocked_time(std::chrono::nanoseconds wait) noexcept {
  blocked += wait;
}

}  // namespace xdpvhost::sys
