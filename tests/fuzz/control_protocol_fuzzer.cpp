// Fuzz target: the control socket's framing and the JSON-RPC dispatch. One or
// two clients write arbitrary bytes, in arbitrary pieces, to a real
// ControlServer (its line framing: partial lines, CR LF, empty lines, the
// request size limit, a client that goes away mid-line, two clients at once);
// each line goes to RpcDispatcher::handle with the embedded proto/ schemas
// (nesting limit, JSON, the JSON-RPC envelope, the method table, the params
// schema of every method). The input format and the model every reply is
// checked against: control_session.hpp.
//
// Behind the dispatcher is the real method table (every method proto/
// documents) with handlers that only validate: after the schema, each runs
// the parsing its ControlApi method runs before it touches the daemon
// (parse_port, parse_uplink, parse_tunables_set, parse_log_level) and
// answers with that error, or with operation_failed "params valid" -- there
// is no daemon behind it. So every input is cheap and the target reaches
// millions of sessions; control_api_fuzzer.cpp is the same session over the
// real ControlApi and a real Daemon (state, results, side effects), at a
// fraction of the rate. Beyond the session's model, no error may be an
// exception caught on the way out ("unexpected error: ...").

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "config/config_change.hpp"
#include "control/control_api.hpp"
#include "control/control_server.hpp"
#include "control/rpc_dispatcher.hpp"
#include "control_session.hpp"
#include "schemas/schema_registry.hpp"

namespace {

using namespace xdpvhost::daemon;
using namespace xdpvhost::fuzz::control;
using nlohmann::json;

template <class T>
std::optional<RpcError> refused(const ConfigResult<T>& parsed) {
  if (parsed) return std::nullopt;
  if (parsed.error().message.rfind("unexpected error:", 0) == 0)
    violated("an exception escaped the params parsing", parsed.error().message);
  return to_rpc_error(parsed.error());
}

RpcResult validate_only(const std::string& method, const json& params) {
  std::optional<RpcError> error;
  if (method == "port.add") {
    error = refused(parse_port(params, "params"));
  } else if (method == "uplink.add") {
    error = refused(parse_uplink(params, "params"));
  } else if (method == "tunables.set") {
    error = refused(parse_tunables_set(params));
  } else if (method == "log.set_level") {
    const std::string level = params.at("level").get<std::string>();
    if (!parse_log_level(level))
      error = RpcError{RpcErrorCode::kInvalidParams, "unknown level " + level, nullptr};
  }
  if (error) return *error;
  return RpcError{RpcErrorCode::kOperationFailed,
                  method + ": params valid (this dispatcher only validates)", nullptr};
}

struct Service {
  boost::asio::io_context io;
  RpcDispatcher dispatcher{SchemaRegistry::embedded()};
  std::size_t limit = 0;
  std::optional<ControlServer> server;

  Service() {
    for (const std::string& method : SchemaRegistry::embedded().methods())
      dispatcher.add(method,
                     [method](const json& params) { return validate_only(method, params); });
    if (!dispatcher.missing_methods().empty()) violated("a method of proto/ is not registered");
    dispatcher.set_check_results(true);
  }

  void open(std::size_t max_request_bytes) {
    limit = max_request_bytes;
    ControlServer::Options options;
    options.path = control_socket_path();
    options.mode = 0600;
    options.max_request_bytes = limit;
    server.emplace(
        io, options, [this](std::string_view line) { return dispatcher.handle(line); },
        [this] { return dispatcher.too_large(limit); });
    if (std::string error; !server->start(error)) violated("control server start", error);
  }
  ControlServer& control() { return *server; }
  void settle() {
    for (int i = 0; i < 10000 && io.poll() > 0; ++i) {
    }
    io.restart();
  }
  void close() {
    server.reset();
    settle();
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  init_process();
  static Service service;
  run_session(service, data, size);
  service.close();
  return 0;
}
