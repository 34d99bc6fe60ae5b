#pragma once
// What an fd is: one a peer handed over, before it is trusted with a job,
// and every fd of the process, for the resource ledger (fd_census.hpp).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace xdpvhost::sys {

// The kinds the ledger counts, from the fd's /proc/self/fd link.
enum class FdKind : std::uint8_t {
  kSocket,   // socket:[inode]
  kEventfd,  // anon_inode:[eventfd]
  kEpoll,    // anon_inode:[eventpoll]
  kTimerfd,  // anon_inode:[timerfd]
  kMemfd,    // /memfd:name (deleted)
  kBpfProg,  // anon_inode:bpf-prog
  kBpfMap,   // anon_inode:bpf-map
  kOther,    // files, pipes, signalfd, netlink is a socket, ...
};
inline constexpr std::size_t kFdKinds = 8;

// The names the ledger uses (status, metrics label `kind`), in FdKind's order.
inline constexpr std::array<const char*, kFdKinds> kFdKindNames{
    "socket", "eventfd", "epoll", "timerfd", "memfd", "bpf_prog", "bpf_map", "other"};
constexpr const char* to_string(FdKind kind) noexcept {
  return kFdKindNames[static_cast<std::size_t>(kind)];
}

// The kind of an fd whose /proc/self/fd link reads `link`.
FdKind classify_fd_link(std::string_view link) noexcept;

// An eventfd (its /proc/self/fd link reads "anon_inode:[eventfd]").
bool is_eventfd(int fd) noexcept;

// O_NONBLOCK on the fd's open file description; false on failure.
bool set_nonblocking(int fd) noexcept;

}  // namespace xdpvhost::sys
