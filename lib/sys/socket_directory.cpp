#include "sys/socket_directory.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace xdpvhost::sys {

namespace {

std::mutex port_dirs_mutex;
std::vector<std::string>& port_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

// One directory below `dir`, never through a symlink, never above `dir`.
int open_below(int dir, const std::string& component) noexcept {
  open_how how{};
  // No O_NOFOLLOW: with it, O_PATH would open a trailing symlink itself;
  // without it RESOLVE_NO_SYMLINKS refuses it (ELOOP).
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  long fd;
  do {
    fd = ::syscall(SYS_openat2, dir, component.c_str(), &how, sizeof how);
  } while (fd < 0 && errno == EAGAIN);
  return static_cast<int>(fd);
}

}  // namespace

std::string check_normal_path(std::string_view path) {
  if (path.empty() || path.front() != '/') return "is not an absolute path";
  if (path.size() > 1 && path.back() == '/') return "ends in a slash";
  std::size_t start = 1;
  while (start <= path.size() && path.size() > 1) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view part = path.substr(start, end - start);
    if (part.empty()) return "has an empty component (\"//\")";
    if (part == "." || part == "..") return "has a \"" + std::string(part) + "\" component";
    start = end + 1;
  }
  return "";
}

bool path_is_below(std::string_view path, std::string_view root) {
  if (root == "/") return path.size() > 1 && path.front() == '/';
  return path.size() > root.size() + 1 && path.substr(0, root.size()) == root &&
         path[root.size()] == '/';
}

std::optional<std::string> socket_root_of(std::string_view path,
                                          const std::vector<std::string>& roots) {
  if (roots.empty()) return std::string("/");
  const std::string* best = nullptr;
  for (const auto& root : roots)
    if (path_is_below(path, root) && (best == nullptr || root.size() > best->size())) best = &root;
  if (best == nullptr) return std::nullopt;
  return *best;
}

std::optional<SocketLocation> locate_socket(const std::string& path,
                                            const std::vector<std::string>& roots, bool create_dirs,
                                            std::string& error, bool* missing) {
  if (missing != nullptr) *missing = false;
  if (std::string problem = check_normal_path(path); !problem.empty()) {
    error = path + " " + problem;
    return std::nullopt;
  }
  const auto root = socket_root_of(path, roots);
  if (!root) {
    std::string list;
    for (const auto& r : roots) list += (list.empty() ? "" : ", ") + r;
    error = path + " is not below any of socket_dirs (" + list + ")";
    return std::nullopt;
  }
  SocketLocation where;
  where.path = path;
  // The root as the administrator named it (following its symlinks), made
  // if it is not there yet.
  if (create_dirs) {
    std::error_code ignored;
    std::filesystem::create_directories(*root, ignored);
  }
  UniqueFd dir(::open(root->c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    if (missing != nullptr) *missing = errno == ENOENT;
    error = "socket directory " + *root + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::string walked = *root == "/" ? "" : *root;
  std::size_t start = walked.size() + 1;
  for (;;) {
    const std::size_t end = path.find('/', start);
    if (end == std::string::npos) break;  // the last component is the socket's name
    const std::string component = path.substr(start, end - start);
    walked += "/" + component;
    int fd = open_below(dir.get(), component);
    if (fd < 0 && errno == ENOENT && create_dirs) {
      if (::mkdirat(dir.get(), component.c_str(), 0755) != 0 && errno != EEXIST) {
        error = "cannot create " + walked + ": " + std::strerror(errno);
        return std::nullopt;
      }
      fd = open_below(dir.get(), component);
    }
    if (fd < 0) {
      const int err = errno;
      if (missing != nullptr) *missing = err == ENOENT;
      if (err == ELOOP)
        error = walked + " is a symlink: a socket path may not pass through one below " + *root;
      else if (err == ENOTDIR)
        error = walked + " is not a directory";
      else
        error = walked + ": " + std::strerror(err);
      return std::nullopt;
    }
    dir.reset(fd);
    start = end + 1;
  }
  where.dir = std::move(dir);
  where.name = path.substr(start);
  return where;
}

std::string fd_path(int fd, std::string_view name) {
  std::string p = "/proc/self/fd/" + std::to_string(fd);
  if (!name.empty()) {
    p += '/';
    p += name;
  }
  return p;
}

void set_port_socket_dirs(std::vector<std::string> dirs) {
  std::lock_guard lock(port_dirs_mutex);
  port_dirs() = std::move(dirs);
}

std::vector<std::string> port_socket_dirs() {
  std::lock_guard lock(port_dirs_mutex);
  return port_dirs();
}

}  // namespace xdpvhost::sys
