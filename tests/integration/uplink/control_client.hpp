#pragma once
// JSON-RPC 2.0 over xdpvhostd's control socket (one request per line).

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "sys/unique_fd.hpp"

namespace xdpvhost::uplink_test {

struct RpcReply {
  bool ok = false;            // a result came back
  nlohmann::json result;      // the result, or null
  int error_code = 0;         // the JSON-RPC error code, 0 on success
  std::string error_message;  // the error's message, or why there was no reply
};

class ControlClient {
 public:
  explicit ControlClient(std::string path,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10));
  RpcReply call(const std::string& method, const nlohmann::json& params = nlohmann::json::object());

 private:
  bool ensure_connected(std::string& error);

  std::string path_;
  std::chrono::milliseconds timeout_;
  sys::UniqueFd fd_;
  std::string pending_;  // bytes after the last line read
  int next_id_ = 1;
};

}  // namespace xdpvhost::uplink_test
