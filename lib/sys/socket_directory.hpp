#pragma once
// Where a unix socket lives, reached without following a symlink: the
// socket's directory as an O_PATH fd, opened component by component with
// openat2(RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH) below a trusted root, and
// the socket's file name in it. Sockets are then bound and connected
// through /proc/self/fd/N paths of those fds, so nothing a writer of the
// directory tree swaps in (a symlink to another service's socket, to
// /etc, ...) is ever followed.
//
// A root is one of the configured socket directories (config socket_dirs):
// the administrator's path, opened as given (its own components may be
// symlinks, /var/run is one on Debian). Everything below it must be a real
// directory. Without roots, "/" is the root: the whole path is symlink-free.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sys/unique_fd.hpp"

namespace xdpvhost::sys {

struct SocketLocation {
  UniqueFd dir;      // O_PATH fd of the socket's directory
  std::string name;  // the socket file's name in it
  std::string path;  // the path as configured, for messages
};

// "" if `path` is absolute and normal (no empty, "." or ".." component, no
// trailing slash), else the problem.
std::string check_normal_path(std::string_view path);

// Whether `path` lies below `root` (both normal): "/a/b/c" is below "/a" and
// "/a/b" but not below "/a/bc". Every path is below "/".
bool path_is_below(std::string_view path, std::string_view root);

// The longest of `roots` that `path` lies below; "/" when `roots` is empty;
// nullopt when none holds it.
std::optional<std::string> socket_root_of(std::string_view path,
                                          const std::vector<std::string>& roots);

// Opens the directory of the socket at `path` (see above). With
// `create_dirs`, missing directories below the root are made (mode 0755
// less the umask). nullopt with `error` naming the component at fault;
// `missing` is set when a directory does not exist (yet), as opposed to a
// path that is refused.
std::optional<SocketLocation> locate_socket(const std::string& path,
                                            const std::vector<std::string>& roots, bool create_dirs,
                                            std::string& error, bool* missing = nullptr);

// "/proc/self/fd/N" or "/proc/self/fd/N/NAME": a path the kernel resolves
// through the open fd N, for bind() and connect().
std::string fd_path(int fd, std::string_view name = {});

}  // namespace xdpvhost::sys

namespace xdpvhost::sys {

// The socket directories guest ports' sockets must lie below (config
// socket_dirs; empty: anywhere), for the whole process: the daemon sets them
// at start and when it reloads its config, every vhost-user endpoint reads
// them when it binds or connects. Safe from any thread.
void set_port_socket_dirs(std::vector<std::string> dirs);
std::vector<std::string> port_socket_dirs();

}  // namespace xdpvhost::sys
