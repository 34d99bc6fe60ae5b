#include "rpc_client.hpp"

#include "sys/unix_socket_path.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xdpvhost::ctl {

using nlohmann::json;

namespace {

constexpr std::size_t kMaxReplyBytes = 64u << 20;

int remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

RpcClient::RpcClient(std::string socket_path, std::chrono::milliseconds timeout)
    : path_(std::move(socket_path)), timeout_(timeout) {}

bool RpcClient::connect() {
  if (fd_.valid()) return true;
  sockaddr_un addr;
  if (std::string error; !sys::unix_socket_address(path_, addr, error)) {
    problem_ = "control " + error;
    return false;
  }
  sys::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    problem_ = "cannot connect to " + path_ + ": " + std::strerror(errno);
    return false;
  }
  fd_ = std::move(fd);
  return true;
}

bool RpcClient::send_line(const std::string& line) {
  closed_by_daemon_ = false;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::size_t done = 0;
  while (done < line.size()) {
    pollfd p{fd_.get(), POLLOUT, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      problem_ = "timed out sending to " + path_;
      return false;
    }
    const ssize_t n = ::send(fd_.get(), line.data() + done, line.size() - done, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      closed_by_daemon_ = errno == EPIPE || errno == ECONNRESET;
      problem_ = "cannot send to " + path_ + ": " + std::strerror(errno);
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool RpcClient::read_line(std::string& line) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    const std::size_t nl = buffered_.find('\n');
    if (nl != std::string::npos) {
      line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return true;
    }
    if (buffered_.size() > kMaxReplyBytes) {
      problem_ = "reply from " + path_ + " exceeds " + std::to_string(kMaxReplyBytes) + " bytes";
      return false;
    }
    pollfd p{fd_.get(), POLLIN, 0};
    const int r = ::poll(&p, 1, remaining_ms(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      problem_ = "no reply from " + path_ + " within " + std::to_string(timeout_.count()) + " ms";
      return false;
    }
    char chunk[65536];
    const ssize_t n = ::read(fd_.get(), chunk, sizeof chunk);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      closed_by_daemon_ = buffered_.empty();
      problem_ = "the daemon closed the connection on " + path_;
      return false;
    }
    buffered_.append(chunk, static_cast<std::size_t>(n));
  }
}

CallOutcome RpcClient::call(const std::string& method, const json& params) {
  CallOutcome out;
  // A connection kept from an earlier call (stats --watch) may have been
  // closed by the daemon as idle (control.idle_timeout_s) without reading
  // anything: then the request is sent again once, on a new connection.
  const bool reused = fd_.valid();
  if (!connect()) {
    out.problem = problem_;
    return out;
  }
  const long id = next_id_++;
  json request{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) request["params"] = params;
  std::string line;
  bool sent = send_line(request.dump() + "\n") && read_line(line);
  if (!sent && reused && closed_by_daemon_) {
    fd_.reset();
    sent = connect() && send_line(request.dump() + "\n") && read_line(line);
  }
  if (!sent) {
    fd_.reset();
    out.problem = problem_;
    return out;
  }
  json reply = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object() || reply.value("jsonrpc", "") != "2.0") {
    fd_.reset();
    out.problem = "not a JSON-RPC reply from " + path_;
    return out;
  }
  if (reply.contains("error") && reply["error"].is_object()) {
    out.kind = CallOutcome::Kind::kRpcError;
    out.error = reply["error"];
    return out;
  }
  if (!reply.contains("result") || reply.value("id", json()) != json(id)) {
    fd_.reset();
    out.problem = "reply from " + path_ + " does not answer request " + std::to_string(id);
    return out;
  }
  out.kind = CallOutcome::Kind::kResult;
  out.result = std::move(reply["result"]);
  return out;
}

}  // namespace xdpvhost::ctl
