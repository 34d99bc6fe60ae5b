// What the control server answers a refused config change with: each
// ConfigErrorKind's JSON-RPC code (proto/errors.json describes each code).

#include <gtest/gtest.h>

#include "control/control_api.hpp"

namespace xdpvhost::daemon {
namespace {

TEST(RpcCode, EachConfigErrorKindHasItsCode) {
  const std::pair<ConfigErrorKind, RpcErrorCode> expected[] = {
      {ConfigErrorKind::kIo, RpcErrorCode::kInvalidParams},
      {ConfigErrorKind::kSyntax, RpcErrorCode::kInvalidParams},
      {ConfigErrorKind::kSchema, RpcErrorCode::kInvalidParams},
      {ConfigErrorKind::kInvalid, RpcErrorCode::kInvalidParams},
      {ConfigErrorKind::kSocketPath, RpcErrorCode::kInvalidSocketPath},
      {ConfigErrorKind::kNameInUse, RpcErrorCode::kNameInUse},
      {ConfigErrorKind::kMacInUse, RpcErrorCode::kMacInUse},
      {ConfigErrorKind::kSocketInUse, RpcErrorCode::kSocketInUse},
      {ConfigErrorKind::kNotFound, RpcErrorCode::kNotFound},
      {ConfigErrorKind::kInUse, RpcErrorCode::kInUse},
      {ConfigErrorKind::kOperationFailed, RpcErrorCode::kOperationFailed},
  };
  for (const auto& [kind, code] : expected)
    EXPECT_EQ(rpc_code(kind), code) << static_cast<int>(kind) << " -> " << to_string(code);
}

TEST(RpcCode, AnErrorsDetailsTravelAsData) {
  const ConfigError error{ConfigErrorKind::kSchema, "ports[0].mac: bad", {"a", "b"}};
  const RpcError e = to_rpc_error(error);
  EXPECT_EQ(e.code, RpcErrorCode::kInvalidParams);
  EXPECT_EQ(e.message, "ports[0].mac: bad");
  EXPECT_EQ(e.data, (nlohmann::json{{"errors", {"a", "b"}}}));
}

}  // namespace
}  // namespace xdpvhost::daemon
