#pragma once
// JSON-RPC 2.0 over the control socket: parses a request line, checks the
// envelope and the method's params against proto/ (the embedded schemas),
// runs the method and frames the reply. Every failure becomes an error
// object with a code from proto/errors.json and a message naming the
// problem; nothing a client sends makes it throw.

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "proto/rpc_error_code.hpp"
#include "schemas/schema_registry.hpp"

namespace xdpvhost::daemon {

struct RpcError {
  RpcErrorCode code = RpcErrorCode::kInternalError;
  std::string message;
  nlohmann::json data;  // optional details (null when none)
};

// A method's answer: a result or an error.
class RpcResult {
 public:
  RpcResult(nlohmann::json result) : result_(std::move(result)) {}        // NOLINT: implicit
  RpcResult(RpcError error) : error_(std::move(error)), failed_(true) {}  // NOLINT: implicit
  bool ok() const noexcept { return !failed_; }
  const nlohmann::json& result() const noexcept { return result_; }
  const RpcError& error() const noexcept { return error_; }

 private:
  nlohmann::json result_;
  RpcError error_;
  bool failed_ = false;
};

class RpcDispatcher {
 public:
  using Method = std::function<RpcResult(const nlohmann::json& params)>;

  explicit RpcDispatcher(const SchemaRegistry& registry) : registry_(registry) {}

  // Registers a method; its name must have a schema in proto/methods/.
  void add(const std::string& name, Method method);
  // Methods documented in proto/ but not registered (should be none).
  std::vector<std::string> missing_methods() const;

  // One request line in, one reply line out ("" for a notification).
  std::string handle(std::string_view line);
  // The reply for a request that exceeded the size limit.
  std::string too_large(std::size_t limit) const;
  // When set, every result is validated against its schema and a mismatch
  // is answered as an internal error (tests turn this on).
  void set_check_results(bool on) noexcept { check_results_ = on; }

 private:
  nlohmann::json dispatch(const nlohmann::json& request, bool& notification);

  const SchemaRegistry& registry_;
  std::map<std::string, Method, std::less<>> methods_;
  bool check_results_ = false;
};

nlohmann::json error_object(const RpcError& error);

}  // namespace xdpvhost::daemon
