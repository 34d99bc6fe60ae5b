#pragma once
// The filesystem side of a unix socket, in one place for every listener (the
// control socket, vhost-user server ports) and connector (client ports):
// the sun_path limit, the directory (reached without following a symlink,
// socket_directory.hpp), a socket file left by an earlier run, the file's
// mode and group, and who is at the other end.

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include <optional>
#include <string>
#include <vector>

#include "sys/socket_directory.hpp"
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
  // Directories the socket must lie below (socket_directory.hpp); empty:
  // anywhere, with no symlink on the whole path.
  std::vector<std::string> roots;
};

// A listening socket and the file it is bound to.
struct UnixListener {
  UniqueFd fd;
  SocketLocation where;
  dev_t dev = 0;  // the socket file's identity, to remove only our own
  ino_t ino = 0;
  bool valid() const noexcept { return fd.valid(); }
};

// A non-blocking, close-on-exec listening socket at `path`. Missing
// directories below the root are created. A socket file that nobody is bound
// to any more (a connect answers ECONNREFUSED: left by an earlier run) is
// replaced; a live socket of any type, a file of another kind, or a socket
// whose liveness cannot be told (the probe failed: out of fds, EACCES) is
// refused and left alone. The socket is made under a temporary name in the
// same directory -- bound with exactly `options.mode` (a umask of ~mode
// around bind()), given its group, listening -- and then renamed to `path`
// without replacing anything, so `path` never shows a socket that refuses
// connections. Invalid with `error` on failure.
UnixListener listen_unix(const std::string& path, const UnixListenOptions& options,
                         std::string& error);

// Removes the socket file of `listener` if it is still the one it bound
// (not a file someone put there since), and closes the socket.
void remove_unix_socket(UnixListener& listener) noexcept;

// The outcome of connecting to a frontend's socket.
struct UnixConnectResult {
  UniqueFd fd;  // connected, non-blocking, close-on-exec; invalid on failure
  // The path itself is refused (outside the roots, through a symlink, not a
  // socket), as opposed to nothing listening there yet.
  bool refused = false;
  std::string error;
};

// Connects to the socket at `path` below `roots` (empty: anywhere) without
// following a symlink, the last component included: the socket file is
// opened with O_PATH first and connected to through its fd.
UnixConnectResult connect_unix(const std::string& path, const std::vector<std::string>& roots);

// SO_PEERCRED of a connected unix socket.
std::optional<ucred> peer_credentials(int fd) noexcept;
// SO_PEERGROUPS: the peer's supplementary groups (empty if unknown).
std::vector<gid_t> peer_groups(int fd);

}  // namespace xdpvhost::sys
