#include "daemon_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "control_client.hpp"

#ifndef XDPVHOSTD_PATH
#define XDPVHOSTD_PATH "xdpvhostd"
#endif

namespace xdpvhost::test_support {
namespace {

using Clock = std::chrono::steady_clock;

bool answers_version(const std::string& control_socket) {
  if (::access(control_socket.c_str(), F_OK) != 0) return false;
  try {
    return ControlClient(control_socket, std::chrono::seconds(2)).request("version").ok();
  } catch (const RpcFailure&) {
    return false;
  }
}

}  // namespace

std::string DaemonProcess::binary() {
  if (const char* env = std::getenv("XDPVHOSTD"); env != nullptr && *env != '\0') return env;
  return XDPVHOSTD_PATH;
}

DaemonProcess::DaemonProcess(std::filesystem::path dir, nlohmann::json config, std::string netns)
    : dir_(std::move(dir)), config_(std::move(config)), netns_(std::move(netns)) {
  control_socket_ = config_.at("control").at("socket").get<std::string>();
}

DaemonProcess::~DaemonProcess() {
  kill();
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
  ::unlink(control_socket_.c_str());
  const std::string log_path = (dir_ / "xdpvhostd.log").string();
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    error = "cannot open " + log_path + ": " + std::strerror(errno);
    return false;
  }
  std::vector<std::string> args{binary(), "--config", config_path.string()};
  if (!netns_.empty()) args.insert(args.begin(), {"ip", "netns", "exec", netns_});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    error = std::string("fork: ") + std::strerror(errno);
    ::close(log_fd);
    return false;
  }
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (!running()) {
      error = "xdpvhostd exited with status " + std::to_string(status_.value_or(-1)) +
              " before its control socket answered; log:\n" + log_tail();
      return false;
    }
    if (answers_version(control_socket_)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  error = "xdpvhostd control socket " + control_socket_ + " did not answer; log:\n" + log_tail();
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
  kill();
  return std::nullopt;
}

void DaemonProcess::kill() {
  if (pid_ <= 0 || !running()) return;
  ::kill(pid_, SIGKILL);
  int ws = 0;
  if (::waitpid(pid_, &ws, 0) == pid_) reap(ws);
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
  std::ifstream in(dir_ / "xdpvhostd.log");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string DaemonProcess::log_tail(std::size_t lines) const {
  const std::string text = log();
  std::size_t pos = text.size();
  for (std::size_t n = 0; n <= lines && pos > 0; ++n) {
    const std::size_t p = text.rfind('\n', pos - 1);
    if (p == std::string::npos) return text;
    pos = p;
  }
  return text.substr(pos);
}

}  // namespace xdpvhost::test_support
