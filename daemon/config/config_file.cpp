// Reading the config file and writing the persisted state atomically.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "config/config.hpp"
#include "json_schema/json_nesting.hpp"
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

ConfigResult<Config> load_config_file(const std::string& path,
                                      const EnvironmentLookup& environment) {
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
    auto result = parse_config_text(text, &environment);
    if (result) return result;
    ConfigError e = result.error();
    e.message = path + ": " + e.message;
    return e;
  } catch (const std::exception& e) {
    return ConfigError{ConfigErrorKind::kIo, path + ": " + e.what(), {}};
  }
}

std::string save_json_file(const nlohmann::json& document, const std::string& path) {
  std::string text;
  try {
    text = document.dump(2) + "\n";
  } catch (const std::exception& e) {
    return std::string("cannot serialise: ") + e.what();
  }
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  // mkostemp: a new name, O_CREAT | O_EXCL (nothing there is followed or
  // reused), mode 0600.
  std::string tmp = path + ".XXXXXX";
  sys::UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return path + ": cannot create a temporary file beside it: " + errno_text(errno);
  if (::fchmod(fd.get(), 0600) != 0 || !write_all(fd.get(), text) || ::fsync(fd.get()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return tmp + ": cannot write: " + errno_text(err);
  }
  if (::close(fd.release()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return tmp + ": cannot write: " + errno_text(err);
  }
  // rename() replaces `path` itself, a symlink there included: never followed.
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return path + ": cannot replace: " + errno_text(err);
  }
  sys::UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir_fd) ::fsync(dir_fd.get());  // best effort: the rename is done either way
  return "";
}

std::string save_config_file(const Config& config, const std::string& path) {
  try {
    return save_json_file(to_json(config), path);
  } catch (const std::exception& e) {
    return std::string("cannot serialise the config: ") + e.what();
  }
}

std::string save_state_file(const RunTimeState& state, const std::string& path) {
  try {
    return save_json_file(to_json(state), path);
  } catch (const std::exception& e) {
    return std::string("cannot serialise the state: ") + e.what();
  }
}

ConfigResult<LoadedState> load_state_file(const std::string& path) {
  LoadedState loaded;
  std::string text;
  try {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return loaded;
      return ConfigError{ConfigErrorKind::kIo, path + ": " + errno_text(errno), {}};
    }
    // O_NONBLOCK: a FIFO or device put there must not hold start-up; only a
    // regular file is read.
    sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (!fd)
      return ConfigError{ConfigErrorKind::kIo, path + ": cannot open: " + errno_text(errno), {}};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
      return ConfigError{ConfigErrorKind::kIo, path + ": not a regular file", {}};
    char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0)
        return ConfigError{ConfigErrorKind::kIo, path + ": read error: " + errno_text(errno), {}};
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      if (static_cast<std::streamoff>(text.size()) > kMaxConfigBytes)
        return ConfigError{ConfigErrorKind::kIo, path + ": larger than 64 MiB", {}};
    }
    if (json_nesting_depth(text, kMaxJsonNesting) > kMaxJsonNesting)
      return ConfigError{ConfigErrorKind::kSyntax, path + ": nested too deeply", {}};
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
    if (!doc.is_object())
      return ConfigError{ConfigErrorKind::kSyntax, path + ": not a JSON object", {}};
    auto each = [&](const char* key, auto&& parse, auto& into) {
      auto it = doc.find(key);
      if (it == doc.end()) return;
      if (!it->is_array()) {
        loaded.skipped.push_back(std::string(key) + ": not an array");
        return;
      }
      for (std::size_t i = 0; i < it->size(); ++i) {
        const std::string where = std::string(key) + "[" + std::to_string(i) + "]";
        auto parsed = parse((*it)[i], where);
        if (parsed)
          into.push_back(std::move(parsed.value()));
        else
          loaded.skipped.push_back(parsed.error().message);
      }
    };
    each(
        "uplinks",
        [](const nlohmann::json& j, const std::string& where) { return parse_uplink(j, where); },
        loaded.state.uplinks);
    each(
        "ports",
        [](const nlohmann::json& j, const std::string& where) { return parse_port(j, where); },
        loaded.state.ports);
    return loaded;
  } catch (const std::exception& e) {
    return ConfigError{ConfigErrorKind::kIo, path + ": " + e.what(), {}};
  }
}

}  // namespace xdpvhost::daemon
