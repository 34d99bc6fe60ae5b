#include "runtime/health_check.hpp"

#include <sys/stat.h>

namespace xdpvhost::daemon {

Health check_health(Daemon& daemon) {
  Health h;
  auto& dp = daemon.dataplane();
  for (std::uint16_t t = 0; t < dp.thread_count(); ++t)
    if (dp.thread(t).state() == dataplane::ServiceThread::State::kStopped)
      h.problems.push_back("service thread " + std::to_string(t) + " is stopped");
    else if (dp.thread(t).stalled())
      h.problems.push_back("service thread " + std::to_string(t) +
                           " is stalled (a command did not run in time)");
    else if (const auto& heart = dp.thread(t).heartbeat(); heart.missing_now())
      h.problems.push_back("service thread " + std::to_string(t) + " has run no poll round for " +
                           std::to_string(heart.silence().count()) + " ms");
  for (const auto& p : daemon.config().ports) {
    const auto* c = daemon.find_port(p.name);
    if (c == nullptr) {
      h.problems.push_back("port " + p.name + " is not open");
      continue;
    }
    if (c->endpoint().state() == vhost::SocketEndpoint::State::kStopped) {
      h.problems.push_back("port " + p.name + " is not serving " + p.socket);
      continue;
    }
    if (p.mode == vhost::SocketMode::kServer) {
      struct stat st {};
      if (::lstat(p.socket.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode))
        h.problems.push_back("port " + p.name + ": socket " + p.socket + " is missing");
    }
  }
  return h;
}

}  // namespace xdpvhost::daemon
