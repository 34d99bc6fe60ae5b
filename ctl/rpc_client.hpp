#pragma once
// A blocking JSON-RPC 2.0 client for xdpvhostd's control socket: one request
// line out, one reply line in, each bounded by a timeout.

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "sys/unique_fd.hpp"

namespace xdpvhost::ctl {

// What a call came back with: a result, a JSON-RPC error from the daemon, or
// a transport failure (nothing usable came back).
struct CallOutcome {
  enum class Kind { kResult, kRpcError, kTransportError };
  Kind kind = Kind::kTransportError;
  nlohmann::json result;  // kResult
  nlohmann::json error;   // kRpcError: the reply's error object {code, message, data?}
  std::string problem;    // kTransportError: what went wrong

  bool ok() const noexcept { return kind == Kind::kResult; }
};

class RpcClient {
 public:
  RpcClient(std::string socket_path, std::chrono::milliseconds timeout);

  // Connects (once; later calls reuse the connection). false with problem().
  bool connect();
  // Sends one request (params omitted when null) and waits for its reply.
  CallOutcome call(const std::string& method, const nlohmann::json& params = nullptr);

  const std::string& problem() const noexcept { return problem_; }
  const std::string& socket_path() const noexcept { return path_; }

 private:
  bool send_line(const std::string& line);
  bool read_line(std::string& line);

  std::string path_;
  std::chrono::milliseconds timeout_;
  sys::UniqueFd fd_;
  bool closed_by_daemon_ = false;  // the last failure was an EOF or EPIPE, nothing read
  std::string buffered_;
  std::string problem_;
  long next_id_ = 1;
};

}  // namespace xdpvhost::ctl
