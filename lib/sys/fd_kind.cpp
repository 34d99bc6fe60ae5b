#include "sys/fd_kind.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace xdpvhost::sys {

FdKind classify_fd_link(std::string_view link) noexcept {
  if (link.starts_with("socket:")) return FdKind::kSocket;
  if (link == "anon_inode:[eventfd]") return FdKind::kEventfd;
  if (link == "anon_inode:[eventpoll]") return FdKind::kEpoll;
  if (link == "anon_inode:[timerfd]") return FdKind::kTimerfd;
  if (link == "anon_inode:bpf-prog") return FdKind::kBpfProg;
  if (link == "anon_inode:bpf-map") return FdKind::kBpfMap;
  if (link.starts_with("/memfd:")) return FdKind::kMemfd;
  return FdKind::kOther;
}

bool is_eventfd(int fd) noexcept {
  char path[32];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  char target[64];
  const ssize_t n = ::readlink(path, target, sizeof target);
  if (n <= 0) return false;
  return classify_fd_link(std::string_view(target, static_cast<std::size_t>(n))) ==
         FdKind::kEventfd;
}

bool set_nonblocking(int fd) noexcept {
  const int flags = ::fcntl(fd, F_GETFL);
  return flags >= 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

}  // namespace xdpvhost::sys
