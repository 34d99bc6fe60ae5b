#include "control_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xdpvhost::uplink_test {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

ControlClient::ControlClient(std::string path, std::chrono::milliseconds timeout)
    : path_(std::move(path)), timeout_(timeout) {}

bool ControlClient::ensure_connected(std::string& error) {
  if (fd_) return true;
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path) {
    error = "control socket path too long";
    return false;
  }
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  if (!fd || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    error = "connect " + path_ + ": " + std::strerror(errno);
    return false;
  }
  fd_ = std::move(fd);
  pending_.clear();
  return true;
}

RpcReply ControlClient::call(const std::string& method, const json& params) {
  RpcReply reply;
  if (!ensure_connected(reply.error_message)) return reply;
  json request{{"jsonrpc", "2.0"}, {"id", next_id_++}, {"method", method}};
  if (!params.empty()) request["params"] = params;
  const std::string line = request.dump() + "\n";
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::send(fd_.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      reply.error_message = std::string("send: ") + std::strerror(errno);
      fd_.reset();
      return reply;
    }
    sent += static_cast<std::size_t>(n);
  }
  const auto deadline = Clock::now() + timeout_;
  std::size_t eol;
  while ((eol = pending_.find('\n')) == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      reply.error_message = "no reply to " + method + " within the timeout";
      fd_.reset();
      return reply;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[65536];
    const ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    if (n <= 0) {
      reply.error_message = "control socket closed";
      fd_.reset();
      return reply;
    }
    pending_.append(buf, static_cast<std::size_t>(n));
  }
  const std::string text = pending_.substr(0, eol);
  pending_.erase(0, eol + 1);
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    reply.error_message = "reply is not JSON: " + text;
  } else if (j.contains("error")) {
    reply.error_code = j["error"].value("code", 0);
    reply.error_message = j["error"].value("message", "");
  } else {
    reply.ok = true;
    reply.result = j.value("result", json());
  }
  return reply;
}

}  // namespace xdpvhost::uplink_test
