#pragma once
// A JSON-RPC 2.0 client for xdpvhostd's control socket, as the integration
// suites use it: one request line out, one reply line in, over a unix stream
// socket (connected on first use, again after a failure).

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "sys/unique_fd.hpp"

namespace xdpvhost::test_support {

struct RpcReply {
  nlohmann::json result;                // null when the call failed
  std::optional<nlohmann::json> error;  // the error object ({code, message, data})
  bool ok() const noexcept { return !error.has_value(); }
  // The error's code and message (0 and "" after a success).
  int error_code() const { return error ? error->value("code", 0) : 0; }
  std::string error_message() const { return error ? error->value("message", "") : ""; }
};

// The socket failed or the reply was not JSON-RPC (not an error reply).
class RpcFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ControlClient {
 public:
  explicit ControlClient(std::string path,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10));

  // Sends a request and waits for its reply. Throws RpcFailure if the socket
  // fails or the reply is not JSON-RPC (not for an error reply).
  RpcReply request(const std::string& method,
                   const nlohmann::json& params = nlohmann::json::object());
  // The result; throws RpcFailure when the daemon answered with an error.
  nlohmann::json call(const std::string& method,
                      const nlohmann::json& params = nlohmann::json::object());

 private:
  void connect();
  std::string read_line();

  std::string path_;
  std::chrono::milliseconds timeout_;
  sys::UniqueFd fd_;
  std::string buffer_;
  std::uint64_t next_id_ = 1;
};

}  // namespace xdpvhost::test_support
