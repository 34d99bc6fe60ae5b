#pragma once
// The compiled proto/ documents: the config schema, the params and result
// schema of every control method, the JSON-RPC envelope and the error table.
// The daemon validates against exactly the files proto/ documents, because
// they are compiled into the binary (proto_files.hpp).

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "json_schema/json_schema.hpp"
#include "schemas/proto_files.hpp"

namespace xdpvhost::daemon {

// Every document's "$id" starts with this; a method's is
// kProtoBaseUri + "methods/NAME.json".
inline constexpr std::string_view kProtoBaseUri = "https://xdpvhost.invalid/proto/";

struct RpcErrorInfo {
  int code = 0;
  std::string name;         // snake_case, e.g. "name_in_use"
  std::string title;        // e.g. "Name in use"
  std::string description;  // when the daemon answers with it
};

class SchemaRegistry {
 public:
  // The registry over the files embedded in this binary, built on first use
  // (thread-safe). If they do not compile the process aborts with the reason
  // on stderr; the unit tests make sure they do.
  static const SchemaRegistry& embedded();

  // Builds a registry from `files` (paths relative to proto/): every *.json
  // but errors.json and examples/ is a schema document; methods/NAME.json
  // describes method NAME with $defs/params and $defs/result. Returns nullptr
  // and sets `error` when a file does not parse, a schema does not compile,
  // a $ref does not resolve, or a method document lacks params/result.
  static std::unique_ptr<SchemaRegistry> build(std::span<const ProtoFile> files,
                                               std::string& error);

  ~SchemaRegistry();

  // config.schema.json: the whole config file.
  const Schema& config() const { return *config_; }
  // config.schema.json#/$defs/NAME ("port", "uplink", "tunables", ...);
  // nullptr if there is no such definition.
  const Schema* config_def(std::string_view name) const;

  // methods/METHOD.json#/$defs/params and .../result; nullptr for an unknown
  // method. Absent params are to be validated as {}.
  const Schema* params(std::string_view method) const;
  const Schema* result(std::string_view method) const;
  bool has_method(std::string_view method) const { return params(method) != nullptr; }
  // Every method name, sorted.
  const std::vector<std::string>& methods() const { return methods_; }

  // rpc.schema.json#/$defs/request and #/$defs/response.
  const Schema& rpc_request() const { return *rpc_request_; }
  const Schema& rpc_response() const { return *rpc_response_; }

  // errors.json, in file order; error(code) is nullptr for an unknown code.
  const std::vector<RpcErrorInfo>& errors() const { return errors_; }
  const RpcErrorInfo* error(int code) const;

  // Any schema by URI, e.g. std::string(kProtoBaseUri) + "types.schema.json#/$defs/port_stats".
  const Schema* find(std::string_view uri) const { return schemas_.find(uri); }

  // Every file as parsed JSON, by path ("examples/config-demo.json"); nullptr
  // if there is no such file. paths() lists them, sorted.
  const nlohmann::json* document(std::string_view path) const;
  std::vector<std::string> paths() const;

 private:
  SchemaRegistry() = default;

  SchemaSet schemas_;
  std::map<std::string, nlohmann::json, std::less<>> documents_;
  std::vector<std::string> methods_;
  std::vector<RpcErrorInfo> errors_;
  const Schema* config_ = nullptr;
  const Schema* rpc_request_ = nullptr;
  const Schema* rpc_response_ = nullptr;
};

}  // namespace xdpvhost::daemon
