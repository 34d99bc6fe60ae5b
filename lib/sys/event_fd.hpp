#pragma once
// A non-blocking eventfd used to wake a thread or signal a guest.

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

#include "sys/unique_fd.hpp"

namespace xdpvhost::sys {

class EventFd {
 public:
  EventFd() : fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  explicit EventFd(UniqueFd fd) : fd_(std::move(fd)) {}

  int get() const noexcept { return fd_.get(); }
  bool valid() const noexcept { return fd_.valid(); }

  // Adds one to the counter; returns false if the write failed.
  bool notify() const noexcept {
    const std::uint64_t one = 1;
    return ::write(fd_.get(), &one, sizeof one) == sizeof one;
  }
  // Reads and clears the counter; returns 0 if nothing was pending.
  std::uint64_t drain() const noexcept {
    std::uint64_t value = 0;
    if (::read(fd_.get(), &value, sizeof value) != sizeof value) return 0;
    return value;
  }

 private:
  UniqueFd fd_;
};

}  // namespace xdpvhost::sys
