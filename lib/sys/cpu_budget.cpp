#include "sys/cpu_budget.hpp"

#include <time.h>

namespace xdpvhost::sys {

std::chrono::nanoseconds thread_cpu_time() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

namespace {
thread_local std::chrono::nanoseconds delegated{0};
}  // namespace

std::chrono::nanoseconds thread_delegated_cpu_time() noexcept {
  return delegated;
}

void add_thread_delegated_cpu_time(std::chrono::nanoseconds spent) noexcept {
  delegated += spent;
}

}  // namespace xdpvhost::sys
