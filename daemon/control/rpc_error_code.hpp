#pragma once
// The JSON-RPC error codes of the control protocol, as named in
// proto/errors.json (a unit test checks that both list the same codes with
// the same names).

#include <string_view>

namespace xdpvhost::daemon {

enum class RpcErrorCode : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kNameInUse = -32001,
  kNotFound = -32002,
  kMacInUse = -32003,
  kInvalidSocketPath = -32004,
  kRequestTooLarge = -32005,
  kOperationFailed = -32006,
  kSocketInUse = -32007,
  kInUse = -32008,
};

inline constexpr RpcErrorCode kAllRpcErrorCodes[] = {
    RpcErrorCode::kParseError,
    RpcErrorCode::kInvalidRequest,
    RpcErrorCode::kMethodNotFound,
    RpcErrorCode::kInvalidParams,
    RpcErrorCode::kInternalError,
    RpcErrorCode::kNameInUse,
    RpcErrorCode::kNotFound,
    RpcErrorCode::kMacInUse,
    RpcErrorCode::kInvalidSocketPath,
    RpcErrorCode::kRequestTooLarge,
    RpcErrorCode::kOperationFailed,
    RpcErrorCode::kSocketInUse,
    RpcErrorCode::kInUse,
};

// The snake_case name errors.json gives the code.
constexpr std::string_view to_string(RpcErrorCode code) {
  switch (code) {
    case RpcErrorCode::kParseError:
      return "parse_error";
    case RpcErrorCode::kInvalidRequest:
      return "invalid_request";
    case RpcErrorCode::kMethodNotFound:
      return "method_not_found";
    case RpcErrorCode::kInvalidParams:
      return "invalid_params";
    case RpcErrorCode::kInternalError:
      return "internal_error";
    case RpcErrorCode::kNameInUse:
      return "name_in_use";
    case RpcErrorCode::kNotFound:
      return "not_found";
    case RpcErrorCode::kMacInUse:
      return "mac_in_use";
    case RpcErrorCode::kInvalidSocketPath:
      return "invalid_socket_path";
    case RpcErrorCode::kRequestTooLarge:
      return "request_too_large";
    case RpcErrorCode::kOperationFailed:
      return "operation_failed";
    case RpcErrorCode::kSocketInUse:
      return "socket_in_use";
    case RpcErrorCode::kInUse:
      return "in_use";
  }
  return "unknown";
}

}  // namespace xdpvhost::daemon
