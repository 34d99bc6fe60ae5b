#include "sys/unix_socket_path.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace xdpvhost::sys {

namespace {

// The socket file `name` in `dir` as an O_PATH fd, never through a symlink.
int open_socket_file(int dir, const std::string& name) noexcept {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;  // not O_NOFOLLOW: that would open a symlink itself
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd;
  do {
    fd = ::syscall(SYS_openat2, dir, name.c_str(), &how, sizeof how);
  } while (fd < 0 && errno == EAGAIN);
  return static_cast<int>(fd);
}

bool address_of(const std::string& proc_path, sockaddr_un& addr) noexcept {
  addr = {};
  addr.sun_family = AF_UNIX;
  if (proc_path.size() > kMaxUnixSocketPath) return false;
  std::memcpy(addr.sun_path, proc_path.c_str(), proc_path.size() + 1);
  return true;
}

// Connects `fd` to the socket file opened as `file` (an O_PATH fd).
int connect_to_file(int fd, int file) noexcept {
  sockaddr_un addr;
  address_of(fd_path(file), addr);  // "/proc/self/fd/N" always fits
  return ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
}

// What is behind an existing socket file.
enum class Liveness {
  kGone,     // no file any more
  kStale,    // nobody is bound to it (ECONNREFUSED): left by an earlier run
  kLive,     // a listener, or a bound socket of another type (EPROTOTYPE)
  kUnknown,  // the probe itself failed (out of fds, EACCES, ...): not ours to judge
};

// Probes the socket file `name` in `dir` with a connect. Only ECONNREFUSED
// says nobody is there; `err` keeps the errno of an unknown outcome.
Liveness probe(int dir, const std::string& name, int& err) noexcept {
  UniqueFd file(open_socket_file(dir, name));
  if (!file) {
    err = errno;
    return err == ENOENT ? Liveness::kGone : Liveness::kUnknown;
  }
  UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe.valid()) {
    err = errno;
    return Liveness::kUnknown;
  }
  if (connect_to_file(probe.get(), file.get()) == 0) return Liveness::kLive;
  err = errno;
  switch (err) {
    case EAGAIN:  // a full backlog answers EAGAIN on a non-blocking connect
    case EPROTOTYPE:
      return Liveness::kLive;
    case ECONNREFUSED:
      return Liveness::kStale;
    default:
      return Liveness::kUnknown;
  }
}

// Makes room for a socket at `name` in `dir`: nothing there, or a stale
// socket file (removed). False with `error` for a live socket, a file of
// another kind, or one whose liveness cannot be told.
bool clear_the_way(int dir, const std::string& name, const std::string& path, std::string& error) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return true;
  if (!S_ISSOCK(st.st_mode)) {
    error = path + " exists and is not a socket";
    return false;
  }
  int err = 0;
  switch (probe(dir, name, err)) {
    case Liveness::kGone:
      return true;
    case Liveness::kStale:
      ::unlinkat(dir, name.c_str(), 0);  // left over by an earlier run
      return true;
    case Liveness::kLive:
      error = path + " is in use: another process listens on it";
      return false;
    case Liveness::kUnknown:
      break;
  }
  error = path + ": cannot tell whether another process listens on it (" + std::strerror(err) +
          "); left as it is";
  return false;
}

// A name for the socket while it is made, in the same directory: unique to
// this process and call, short enough for /proc/self/fd/N/NAME.
std::string temporary_name() {
  static std::atomic<unsigned> counter{0};
  return ".xdpvhost-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
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

UnixListener listen_unix(const std::string& path, const UnixListenOptions& options,
                         std::string& error) {
  UnixListener listener;
  sockaddr_un addr;
  if (!unix_socket_address(path, addr, error)) return {};
  auto where = locate_socket(path, options.roots, true, error);
  if (!where) return {};
  const int dir = where->dir.get();
  const std::string name = where->name;  // a copy: `where` moves into the listener
  if (!clear_the_way(dir, name, path, error)) return {};
  // The socket is bound, given its group and set listening under a name of
  // its own, and only then renamed to `name` (never over a file: a socket
  // someone made meanwhile wins). So `path` never shows a socket that
  // refuses connections, which another starting daemon would take for stale.
  const std::string temporary = temporary_name();
  if (!address_of(fd_path(dir, temporary), addr)) {
    error = path + ": the directory fd's path is too long to bind through /proc/self/fd";
    return {};
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    error = "cannot create a socket for " + path + ": " + std::strerror(errno);
    return {};
  }
  ::unlinkat(dir, temporary.c_str(), 0);  // one a crashed run of this pid left
  // bind() creates the file with the umask applied: give it exactly `mode`.
  const mode_t previous = ::umask(static_cast<mode_t>(~options.mode & 0777));
  const int bound = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(previous);
  if (bound != 0) {
    error = "cannot bind " + path + ": " + std::strerror(bind_errno);
    return {};
  }
  const auto fail = [&](std::string message) {
    error = std::move(message);
    ::unlinkat(dir, temporary.c_str(), 0);
    return UnixListener{};
  };
  struct stat st {};
  if (::fstatat(dir, temporary.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(st.st_mode))
    return fail(path + ": the socket file went away after bind");
  if (options.group && ::fchownat(dir, temporary.c_str(), static_cast<uid_t>(-1), *options.group,
                                  AT_SYMLINK_NOFOLLOW) != 0)
    return fail(path + ": cannot give it to group " + std::to_string(*options.group) + ": " +
                std::strerror(errno));
  if (::listen(fd.get(), options.backlog) != 0)
    return fail("cannot listen on " + path + ": " + std::strerror(errno));
  if (::renameat2(dir, temporary.c_str(), dir, name.c_str(), RENAME_NOREPLACE) != 0) {
    const int err = errno;
    // Someone put a file there since clear_the_way(): a live socket wins; a
    // stale one goes, once.
    std::string why;
    if (err != EEXIST || !clear_the_way(dir, name, path, why) ||
        ::renameat2(dir, temporary.c_str(), dir, name.c_str(), RENAME_NOREPLACE) != 0)
      return fail(why.empty() ? "cannot name the socket " + path + ": " + std::strerror(err) : why);
  }
  listener.dev = st.st_dev;
  listener.ino = st.st_ino;
  listener.where = std::move(*where);  // `dir` stays valid: the fd moved, not closed
  listener.fd = std::move(fd);
  return listener;
}

void remove_unix_socket(UnixListener& listener) noexcept {
  if (listener.where.dir.valid()) {
    const int dir = listener.where.dir.get();
    struct stat st {};
    if (::fstatat(dir, listener.where.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        st.st_dev == listener.dev && st.st_ino == listener.ino)
      ::unlinkat(dir, listener.where.name.c_str(), 0);
    listener.where.dir.reset();
  }
  listener.fd.reset();
}

UnixConnectResult connect_unix(const std::string& path, const std::vector<std::string>& roots) {
  UnixConnectResult r;
  sockaddr_un addr;
  if (!unix_socket_address(path, addr, r.error)) {
    r.refused = true;
    return r;
  }
  bool missing = false;
  auto where = locate_socket(path, roots, false, r.error, &missing);
  if (!where) {
    // A directory not made yet is "not there yet"; a symlink or a path
    // outside the roots is refused.
    r.refused = !missing;
    return r;
  }
  UniqueFd file(open_socket_file(where->dir.get(), where->name));
  if (!file) {
    const int err = errno;
    r.refused = err == ELOOP;
    r.error =
        err == ELOOP ? path + " is a symlink: not followed" : path + ": " + std::strerror(err);
    return r;
  }
  struct stat st {};
  if (::fstat(file.get(), &st) != 0 || !S_ISSOCK(st.st_mode)) {
    r.refused = true;
    r.error = path + " is not a socket";
    return r;
  }
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    r.error = "cannot create a socket: " + std::string(std::strerror(errno));
    return r;
  }
  if (connect_to_file(fd.get(), file.get()) != 0) {
    r.error = path + ": " + std::strerror(errno);
    return r;
  }
  r.fd = std::move(fd);
  return r;
}

std::optional<ucred> peer_credentials(int fd) noexcept {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred)
    return std::nullopt;
  return cred;
}

std::vector<gid_t> peer_groups(int fd) {
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 4; ++attempt) {
    socklen_t len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
      groups.resize(len / sizeof(gid_t));
      return groups;
    }
    if (errno != ERANGE) return {};
    groups.resize(len / sizeof(gid_t) + 1);
  }
  return {};
}

}  // namespace xdpvhost::sys
