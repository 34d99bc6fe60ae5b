#pragma once
// The real xdpvhostd binary as a child process of a test: a config file
// written into the test's directory, stdout and stderr captured to
// xdpvhostd.log there, readiness taken from the control socket answering
// "version", and a SIGTERM stop that reports the exit status. With a network
// namespace it runs as `ip netns exec NS xdpvhostd ...` (ip execs the daemon,
// so the child's pid is the daemon's). It dies with the test process
// (PR_SET_PDEATHSIG). The binary is the one CMake built
// ($<TARGET_FILE:xdpvhostd>, passed as XDPVHOSTD_PATH); the XDPVHOSTD
// environment variable overrides it.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace xdpvhost::test_support {

class DaemonProcess {
 public:
  // `dir` holds config.json and xdpvhostd.log; `config` is the whole config
  // document (its control.socket must be set). `netns`: the namespace to run
  // in, "" for the test's own.
  DaemonProcess(std::filesystem::path dir, nlohmann::json config, std::string netns = "");
  ~DaemonProcess();  // SIGKILL if still running
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  // Starts the binary and waits until the control socket answers "version"
  // (or the process exits, or `timeout` passes).
  bool start(std::string& error, std::chrono::milliseconds timeout = std::chrono::seconds(20));

  pid_t pid() const noexcept { return pid_; }
  // True while the process has not exited (reaps it if it has).
  bool running();
  // How the process ended, once it has: exit code, or 128 + signal.
  std::optional<int> exit_status() const noexcept { return status_; }

  // SIGTERM, then waits up to `deadline` for the exit. Returns the exit
  // status (128 + signal if killed by one), or nullopt if it did not exit in
  // time (it is then SIGKILLed).
  std::optional<int> terminate(std::chrono::milliseconds deadline = std::chrono::seconds(10));
  bool terminate_requested() const noexcept { return terminate_requested_; }
  // SIGKILL and reap: a crash.
  void kill();

  // Open file descriptors of the process (entries of /proc/PID/fd).
  std::size_t open_fds() const;
  // What each of them is ("socket:[123]", "anon_inode:[eventfd]", ...), sorted.
  std::vector<std::string> fd_targets() const;

  const std::string& control_socket() const noexcept { return control_socket_; }
  const std::filesystem::path& dir() const noexcept { return dir_; }
  // The daemon's stdout and stderr so far, and their last `lines` lines.
  std::string log() const;
  std::string log_tail(std::size_t lines = 40) const;

  // Where the binary is.
  static std::string binary();

 private:
  void reap(int wait_status);

  std::filesystem::path dir_;
  nlohmann::json config_;
  std::string netns_;
  std::string control_socket_;
  pid_t pid_ = -1;
  std::optional<int> status_;
  bool terminate_requested_ = false;
};

}  // namespace xdpvhost::test_support
