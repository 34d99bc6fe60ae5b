#include "sys/unix_socket_path.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace xdpvhost::sys {

namespace {

// Whether something accepts connections on `addr` now.
bool accepts_connections(const sockaddr_un& addr) noexcept {
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe.valid()) return false;
  const int rc = ::connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  // A full backlog answers EAGAIN on a non-blocking connect: still alive.
  return rc == 0 || errno == EAGAIN;
}

}  // namespace

bool unix_socket_address(const std::string& path, sockaddr_un& addr, std::string& error) {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() > kMaxUnixSocketPath) {
    error = "socket path \"" + path + "\" is empty or longer than " +
            std::to_string(kMaxUnixSocketPath) + " bytes";
    return false;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  return true;
}

UniqueFd listen_unix(const std::string& path, const UnixListenOptions& options,
                     std::string& error) {
  sockaddr_un addr;
  if (!unix_socket_address(path, addr, error)) return {};
  std::error_code mkdir_error;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), mkdir_error);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      error = path + " exists and is not a socket";
      return {};
    }
    if (accepts_connections(addr)) {
      error = path + " is in use: another process listens on it";
      return {};
    }
    ::unlink(path.c_str());  // left over by an earlier run
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    error = "cannot create a socket for " + path + ": " + std::strerror(errno);
    return {};
  }
  // bind() creates the file with the umask applied: give it exactly `mode`.
  const mode_t previous = ::umask(static_cast<mode_t>(~options.mode & 0777));
  const int bound = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(previous);
  if (bound != 0) {
    error = "cannot bind " + path + ": " + std::strerror(bind_errno);
    return {};
  }
  if (options.group && ::lchown(path.c_str(), static_cast<uid_t>(-1), *options.group) != 0) {
    error = path + ": cannot give it to group " + std::to_string(*options.group) + ": " +
            std::strerror(errno);
    ::unlink(path.c_str());
    return {};
  }
  if (::listen(fd.get(), options.backlog) != 0) {
    error = "cannot listen on " + path + ": " + std::strerror(errno);
    ::unlink(path.c_str());
    return {};
  }
  return fd;
}

void remove_unix_socket(const std::string& path) noexcept {
  ::unlink(path.c_str());
}

}  // namespace xdpvhost::sys
