#include "daemon_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#ifndef XDPVHOSTD_BINARY
#error "XDPVHOSTD_BINARY must name the xdpvhostd under test"
#endif

namespace xdpvhost::uplink_test {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

DaemonProcess::DaemonProcess(std::string workdir, std::string netns)
    : workdir_(std::move(workdir)), netns_(std::move(netns)) {}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && !terminate(std::chrono::seconds(5))) kill();
}

bool DaemonProcess::start(json config, std::string& error, std::chrono::milliseconds timeout) {
  if (!config.contains("control")) config["control"] = json{{"socket", control_path()}};
  if (!config.contains("log")) config["log"] = json{{"level", "info"}};
  if (!config.contains("metrics")) config["metrics"] = json{{"listen", ""}};
  const std::string config_path = workdir_ + "/config.json";
  {
    std::ofstream f(config_path);
    f << config.dump(2) << "\n";
  }
  const std::string socket = config["control"]["socket"].get<std::string>();
  ::unlink(socket.c_str());
  const std::string log_path = workdir_ + "/xdpvhostd.log";
  const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    error = "cannot open " + log_path;
    return false;
  }
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    std::vector<std::string> args{"ip",       "netns",    "exec", netns_, XDPVHOSTD_BINARY,
                                  "--config", config_path};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execvp("ip", argv.data());
    ::_exit(127);
  }
  ::close(log_fd);
  if (pid_ < 0) {
    error = "fork failed";
    return false;
  }
  control_.emplace(socket, std::chrono::seconds(10));
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (!running()) {
      error = "xdpvhostd exited during start:\n" + log_tail();
      return false;
    }
    if (::access(socket.c_str(), F_OK) == 0 && call("version").ok) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  error = "xdpvhostd did not answer on its control socket:\n" + log_tail();
  return false;
}

bool DaemonProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    pid_ = -1;
    return false;
  }
  return true;
}

bool DaemonProcess::wait_exit(std::chrono::milliseconds timeout, int& status) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      pid_ = -1;
      return true;
    }
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::optional<int> DaemonProcess::terminate(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return std::nullopt;
  ::kill(pid_, SIGTERM);
  int status = 0;
  if (!wait_exit(timeout, status)) {
    kill();
    return std::nullopt;
  }
  control_.reset();
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

void DaemonProcess::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
  control_.reset();
}

RpcReply DaemonProcess::call(const std::string& method, const json& params) {
  if (!control_) return RpcReply{false, nullptr, 0, "the daemon is not running"};
  return control_->call(method, params);
}

json DaemonProcess::result(const std::string& method, const json& params) {
  RpcReply r = call(method, params);
  return r.ok ? r.result : json();
}

std::string DaemonProcess::log() const {
  std::ifstream f(workdir_ + "/xdpvhostd.log");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
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

}  // namespace xdpvhost::uplink_test
