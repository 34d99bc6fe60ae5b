#include "control_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xdpvhost::test_support {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

ControlClient::ControlClient(std::string path, std::chrono::milliseconds timeout)
    : path_(std::move(path)), timeout_(timeout) {}

void ControlClient::connect() {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path_.size() >= sizeof addr.sun_path) throw RpcFailure("control socket path too long");
  std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw RpcFailure("cannot connect to " + path_ + ": " + std::strerror(errno));
  fd_ = std::move(fd);
  buffer_.clear();
}

std::string ControlClient::read_line() {
  const auto deadline = Clock::now() + timeout_;
  for (;;) {
    if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      fd_.reset();  // a late reply must not be taken for the next request's
      throw RpcFailure("no reply from " + path_);
    }
    pollfd p{fd_.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char chunk[65536];
    const ssize_t n = ::recv(fd_.get(), chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fd_.reset();
      throw RpcFailure("control socket closed by the daemon");
    }
    buffer_.append(chunk, static_cast<std::size_t>(n));
  }
}

RpcReply ControlClient::request(const std::string& method, const json& params) {
  if (!fd_.valid()) connect();
  const std::uint64_t id = next_id_++;
  std::string line =
      json{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}}.dump();
  line.push_back('\n');
  std::size_t sent = 0;
  while (sent < line.size()) {
    const ssize_t n = ::send(fd_.get(), line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fd_.reset();
      throw RpcFailure("cannot send to " + path_ + ": " + std::strerror(errno));
    }
    sent += static_cast<std::size_t>(n);
  }
  const json reply = json::parse(read_line(), nullptr, /*allow_exceptions=*/false);
  if (reply.is_discarded() || !reply.is_object() || reply.value("jsonrpc", "") != "2.0")
    throw RpcFailure(method + ": reply is not JSON-RPC 2.0");
  if (!reply.contains("id") || reply["id"] != id) throw RpcFailure(method + ": reply id mismatch");
  RpcReply out;
  if (reply.contains("error")) {
    out.error = reply["error"];
  } else if (reply.contains("result")) {
    out.result = reply["result"];
  } else {
    throw RpcFailure(method + ": reply without result or error");
  }
  return out;
}

json ControlClient::call(const std::string& method, const json& params) {
  RpcReply r = request(method, params);
  if (!r.ok()) throw RpcFailure(method + " " + params.dump() + " failed: " + r.error->dump());
  return r.result;
}

}  // namespace xdpvhost::test_support
