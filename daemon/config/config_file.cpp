// Reading the config file and writing the persisted state atomically.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "config/config.hpp"
#include "sys/unique_fd.hpp"

namespace xdpvhost::daemon {

namespace {

// Bigger than any sensible config (4096 ports); keeps a wrong path such as
// /dev/zero from eating memory.
constexpr std::streamoff kMaxConfigBytes = 64 << 20;

std::string errno_text(int err) {
  return std::strerror(err);
}

bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

ConfigResult<Config> load_config_file(const std::string& path) {
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return ConfigError{ConfigErrorKind::kIo, path + ": cannot open: " + errno_text(errno), {}};
    }
    std::string text;
    char buf[65536];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      text.append(buf, static_cast<std::size_t>(in.gcount()));
      if (static_cast<std::streamoff>(text.size()) > kMaxConfigBytes) {
        return ConfigError{ConfigErrorKind::kIo, path + ": larger than 64 MiB", {}};
      }
    }
    if (in.bad()) return ConfigError{ConfigErrorKind::kIo, path + ": read error", {}};
    auto result = parse_config_text(text);
    if (result) return result;
    ConfigError e = result.error();
    e.message = path + ": " + e.message;
    return e;
  } catch (const std::exception& e) {
    return ConfigError{ConfigErrorKind::kIo, path + ": " + e.what(), {}};
  }
}

std::string save_config_file(const Config& config, const std::string& path) {
  std::string text;
  try {
    text = to_json(config).dump(2) + "\n";
  } catch (const std::exception& e) {
    return std::string("cannot serialise the config: ") + e.what();
  }
  const std::string tmp = path + ".tmp";
  sys::UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd) return tmp + ": cannot create: " + errno_text(errno);
  if (!write_all(fd.get(), text) || ::fsync(fd.get()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return tmp + ": cannot write: " + errno_text(err);
  }
  if (::close(fd.release()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return tmp + ": cannot write: " + errno_text(err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return path + ": cannot replace: " + errno_text(err);
  }
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  sys::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd) ::fsync(dir_fd.get());  // best effort: the rename is done either way
  return "";
}

}  // namespace xdpvhost::daemon
