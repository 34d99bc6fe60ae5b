#pragma once
// Readiness of the daemon, for a DaemonSet probe (the control method
// `health`, `xdpvhostctl health`, and GET /healthz on the metrics port): every
// service thread is running and every configured port is serving its
// socket — open, and for a server-mode port its socket file in place (a
// frontend can connect). A client-mode port counts as serving while it is
// connected or reconnecting.

#include <string>
#include <vector>

#include "runtime/daemon.hpp"

namespace xdpvhost::daemon {

struct Health {
  std::vector<std::string> problems;  // empty: healthy
  bool ok() const noexcept { return problems.empty(); }
};

Health check_health(Daemon& daemon);

}  // namespace xdpvhost::daemon
