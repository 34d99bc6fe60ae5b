#include "sys/fd_kind.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace xdpvhost::sys {

bool is_eventfd(int fd) noexcept {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  char target[64];
  const ssize_t n = ::readlink(path, target, sizeof target - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  return std::strcmp(target, "anon_inode:[eventfd]") == 0;
}

bool set_nonblocking(int fd) noexcept {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

}  // namespace xdpvhost::sys
