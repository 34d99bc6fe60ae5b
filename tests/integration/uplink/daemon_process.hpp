#pragma once
// xdpvhostd under test, run inside the node namespace with
// `ip netns exec NS xdpvhostd --config FILE` (ip execs the daemon, so the
// child's pid is the daemon's). Dies with the test process (PDEATHSIG).

#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "control_client.hpp"

namespace xdpvhost::uplink_test {

class DaemonProcess {
 public:
  // `workdir` holds config.json, xdpvhostd.log and the control socket.
  DaemonProcess(std::string workdir, std::string netns);
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  std::string control_path() const { return workdir_ + "/control.sock"; }

  // Writes the config (control socket and log level filled in when absent),
  // starts the daemon and waits until it answers "version".
  bool start(nlohmann::json config, std::string& error,
             std::chrono::milliseconds timeout = std::chrono::seconds(15));
  bool running();
  pid_t pid() const noexcept { return pid_; }
  // SIGTERM; the exit status if it exits within the timeout, nullopt otherwise
  // (then it is killed).
  std::optional<int> terminate(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // SIGKILL and reap: a crash.
  void kill();

  RpcReply call(const std::string& method, const nlohmann::json& params = nlohmann::json::object());
  // The result, or an exception-free null with the error in the log of the
  // test (callers assert on RpcReply when the error matters).
  nlohmann::json result(const std::string& method,
                        const nlohmann::json& params = nlohmann::json::object());

  std::string log() const;
  std::string log_tail(std::size_t lines = 40) const;

 private:
  bool wait_exit(std::chrono::milliseconds timeout, int& status);

  std::string workdir_, netns_;
  pid_t pid_ = -1;
  std::optional<ControlClient> control_;
};

}  // namespace xdpvhost::uplink_test
