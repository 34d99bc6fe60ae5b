#pragma once
// The JSON-RPC error codes of the control protocol, as named in
// proto/errors.json (a unit test checks that both list the same codes with
// the same names).

#include <string_view>

#include "sys/enum_names.hpp"

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

// Every code with the snake_case name errors.json gives it.
inline constexpr sys::EnumNames<RpcErrorCode, 13> kRpcErrorCodes{{
    {RpcErrorCode::kParseError, "parse_error"},
    {RpcErrorCode::kInvalidRequest, "invalid_request"},
    {RpcErrorCode::kMethodNotFound, "method_not_found"},
    {RpcErrorCode::kInvalidParams, "invalid_params"},
    {RpcErrorCode::kInternalError, "internal_error"},
    {RpcErrorCode::kNameInUse, "name_in_use"},
    {RpcErrorCode::kNotFound, "not_found"},
    {RpcErrorCode::kMacInUse, "mac_in_use"},
    {RpcErrorCode::kInvalidSocketPath, "invalid_socket_path"},
    {RpcErrorCode::kRequestTooLarge, "request_too_large"},
    {RpcErrorCode::kOperationFailed, "operation_failed"},
    {RpcErrorCode::kSocketInUse, "socket_in_use"},
    {RpcErrorCode::kInUse, "in_use"},
}};

constexpr std::string_view to_string(RpcErrorCode code) {
  return sys::name_of(kRpcErrorCodes, code);
}

}  // namespace xdpvhost::daemon
