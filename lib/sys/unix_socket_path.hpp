#pragma once
// The filesystem side of a unix socket, in one place for every listener (the
// control socket, vhost-user server ports) and connector (client ports):
// the sun_path limit, the directory, a socket file left by an earlier run,
// and the file's mode and group.

#include <sys/types.h>
#include <sys/un.h>

#include <optional>
#include <string>

#include "sys/unique_fd.hpp"

namespace xdpvhost::sys {

// The longest path sun_path holds (it needs room for the terminating NUL).
inline constexpr std::size_t kMaxUnixSocketPath = sizeof(sockaddr_un{}.sun_path) - 1;

// Fills `addr` for `path`; false with `error` if the path is empty or too long.
bool unix_socket_address(const std::string& path, sockaddr_un& addr, std::string& error);

struct UnixListenOptions {
  unsigned mode = 0660;        // permission bits of the socket file
  std::optional<gid_t> group;  // the file's group, if not the process's
  int backlog = 16;
};

// A non-blocking, close-on-exec listening socket at `path`. The directory is
// created if absent. A socket file that nobody listens on any more (left by
// an earlier run) is replaced; a live socket, or a file of another kind, is
// refused. The file is created with exactly `options.mode` (the process
// umask does not apply). Invalid with `error` on failure.
UniqueFd listen_unix(const std::string& path, const UnixListenOptions& options, std::string& error);

// Removes the socket file of a listener this process made.
void remove_unix_socket(const std::string& path) noexcept;

}  // namespace xdpvhost::sys
