#include "daemon_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "sys/unique_fd.hpp"

#ifndef XDPVHOSTD_PATH
#define XDPVHOSTD_PATH "xdpvhostd"
#endif

namespace xdpvhost::integration {
namespace {

using Clock = std::chrono::steady_clock;

bool socket_answers(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return fd.valid() && ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
}

}  // namespace

std::string DaemonProcess::binary() {
  if (const char* env = std::getenv("XDPVHOSTD"); env != nullptr && *env != '\0') return env;
  return XDPVHOSTD_PATH;
}

DaemonProcess::DaemonProcess(std::filesystem::path dir, nlohmann::json config)
    : dir_(std::move(dir)), config_(std::move(config)) {
  control_socket_ = config_.at("control").at("socket").get<std::string>();
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && running()) {
    ::kill(pid_, SIGKILL);
    int ws = 0;
    if (::waitpid(pid_, &ws, 0) == pid_) reap(ws);
  }
}

void DaemonProcess::reap(int ws) {
  if (WIFEXITED(ws))
    status_ = WEXITSTATUS(ws);
  else if (WIFSIGNALED(ws))
    status_ = 128 + WTERMSIG(ws);
  else
    status_ = -1;
}

bool DaemonProcess::start(std::string& error, std::chrono::milliseconds timeout) {
  const auto config_path = dir_ / "config.json";
  {
    std::ofstream out(config_path);
    out << config_.dump(2) << "\n";
    if (!out) {
      error = "cannot write " + config_path.string();
      return false;
    }
  }
  const std::string log_path = (dir_ / "daemon.log").string();
  const std::string bin = binary();
  const std::string cfg = config_path.string();
  std::vector<std::string> args{bin, "--config", cfg};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_ = ::fork();
  if (pid_ < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  if (pid_ == 0) {
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log >= 0) {
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
    }
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (!running()) {
      error = "xdpvhostd exited with status " + std::to_string(status_.value_or(-1)) +
              " before its control socket answered; log:\n" + log();
      return false;
    }
    if (socket_answers(control_socket_)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  error = "xdpvhostd control socket " + control_socket_ + " did not answer; log:\n" + log();
  return false;
}

bool DaemonProcess::running() {
  if (pid_ <= 0 || status_) return false;
  int ws = 0;
  const pid_t r = ::waitpid(pid_, &ws, WNOHANG);
  if (r == 0) return true;
  if (r == pid_) reap(ws);
  return false;
}

std::optional<int> DaemonProcess::terminate(std::chrono::milliseconds deadline) {
  if (pid_ <= 0) return std::nullopt;
  if (terminate_requested_ || !running()) return status_;
  terminate_requested_ = true;
  ::kill(pid_, SIGTERM);
  const auto until = Clock::now() + deadline;
  while (Clock::now() < until) {
    if (!running()) return status_;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(pid_, SIGKILL);
  int ws = 0;
  if (::waitpid(pid_, &ws, 0) == pid_) reap(ws);
  return std::nullopt;
}

std::size_t DaemonProcess::open_fds() const {
  std::size_t n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++n;
  return n;
}

std::vector<std::string> DaemonProcess::fd_targets() const {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::error_code rec;
    const auto target = std::filesystem::read_symlink(it->path(), rec);
    out.push_back(rec ? std::string("?") : target.string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string DaemonProcess::log() const {
  std::ifstream in(dir_ / "daemon.log");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace xdpvhost::integration
