// Fuzz target: the control socket all the way into the daemon. One or two
// clients write arbitrary bytes, in arbitrary pieces, to a real ControlServer
// (its line framing: partial lines, CR LF, empty lines, the request size
// limit, a client that goes away mid-line); each line goes to
// RpcDispatcher::handle with the embedded proto/ schemas and from there to
// the real ControlApi over a real Daemon (one service thread, no ports or
// uplinks at the start) -- every method, with results checked against their
// schemas (set_check_results, as xdpvhostd --check-replies). The input format
// and the model every reply is checked against: control_session.hpp.
// control_protocol_fuzzer.cpp is the same session with a dispatcher that only
// validates (many more inputs per second).
//
// No root is needed, and nothing outside the process is touched: the two
// methods that reach out get their params confined once they are valid (a
// request that is refused keeps its params as sent, and is refused by the
// real code):
//   port.add    the socket path moves into the private directory (same path
//               in, same path out, so "socket in use" still happens; the
//               control socket's own path is kept), so the port binds or
//               connects there, never over another service's socket;
//   uplink.add  the interface is renamed to "xvfz" + 8 hex digits, which does
//               not exist: the uplink is created and waits for its interface,
//               no XDP program is attached anywhere.
// Everything else (tunables.set, stats.reset, port.remove, ...) runs as is.
// Beyond the session's model, the target checks that removing every port and
// uplink after an input gives back the config the daemon started with
// (unless tunables.set or log.set_level changed it; the daemon is then made
// again).

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config.hpp"
#include "control/control_api.hpp"
#include "control/control_server.hpp"
#include "control/rpc_dispatcher.hpp"
#include "control_session.hpp"
#include "runtime/daemon.hpp"
#include "schemas/schema_registry.hpp"

namespace {

using namespace xdpvhost::daemon;
using namespace xdpvhost::fuzz::control;
using nlohmann::json;

std::uint32_t fnv1a(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

std::string hex8(std::uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

// The method as the real dispatcher answers it, after its params were
// rewritten by `confine` (only when they are valid).
RpcResult confined_call(RpcDispatcher& inner, const std::string& method, json params) {
  const json request{{"jsonrpc", "2.0"}, {"id", 0}, {"method", method}, {"params", params}};
  const json reply = json::parse(inner.handle(request.dump()), nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) violated("inner reply is not JSON");
  if (reply.contains("result")) return RpcResult(reply["result"]);
  const json& e = reply["error"];
  return RpcError{static_cast<RpcErrorCode>(e["code"].get<int>()), e["message"].get<std::string>(),
                  e.contains("data") ? e["data"] : json(nullptr)};
}

// One daemon with its control socket, as xdpvhostd's main() puts them
// together. The Daemon lives across inputs (starting one starts a service
// thread): after each input every port and uplink is removed, and its config
// must be the one it started with, or else (tunables.set, log.set_level) it
// is made again. The control server (with this input's request limit) and
// the methods (ControlApi, with its stats.reset baselines) are new for every
// input.
struct Service {
  boost::asio::io_context io;
  Daemon daemon;
  std::size_t limit = 0;
  std::unique_ptr<ControlApi> api;
  std::unique_ptr<RpcDispatcher> dispatcher;
  std::unique_ptr<RpcDispatcher> inner;
  std::optional<ControlServer> server;

  static Config config() {
    Config c;
    c.control.socket = control_socket_path();
    c.log.level = LogLevel::kOff;
    c.tunables.busy_poll_us = 0;  // the service thread sleeps when idle, as in event mode
    return c;
  }

  Service() : daemon(io, config()) {
    if (std::string error = daemon.start(); !error.empty()) violated("daemon start", error);
  }
  ~Service() {
    server.reset();
    daemon.shutdown();
  }

  // The methods and the control socket, fresh.
  void open(std::size_t max_request_bytes) {
    limit = max_request_bytes;
    api = std::make_unique<ControlApi>(daemon);
    dispatcher = std::make_unique<RpcDispatcher>(SchemaRegistry::embedded());
    inner = std::make_unique<RpcDispatcher>(SchemaRegistry::embedded());
    api->register_methods(*dispatcher);
    api->register_methods(*inner);
    dispatcher->set_check_results(true);
    inner->set_check_results(true);
    if (!dispatcher->missing_methods().empty()) violated("a method of proto/ is not registered");
    dispatcher->add("port.add", [this](const json& params) {
      json p = params;
      if (parse_port(params, "params")) {
        const std::string socket = params.at("socket").get<std::string>();
        if (socket != control_socket_path() && socket.rfind(private_dir() + "/", 0) != 0)
          p["socket"] = private_dir() + "/p" + hex8(fnv1a(socket));
      }
      return confined_call(*inner, "port.add", std::move(p));
    });
    dispatcher->add("uplink.add", [this](const json& params) {
      json p = params;
      if (parse_uplink(params, "params"))
        p["interface"] = "xvfz" + hex8(fnv1a(params.at("interface").get<std::string>()));
      return confined_call(*inner, "uplink.add", std::move(p));
    });
    ControlServer::Options options;
    options.path = control_socket_path();
    options.mode = 0600;
    options.max_request_bytes = limit;
    server.emplace(
        io, options, [this](std::string_view line) { return dispatcher->handle(line); },
        [this] { return dispatcher->too_large(limit); });
    if (std::string error; !server->start(error)) violated("control server start", error);
  }

  ControlServer& control() { return *server; }

  // Back to the state open() found; false if the Daemon cannot be reused.
  bool close() {
    server.reset();
    std::vector<std::string> names;
    for (const auto& [name, port] : daemon.ports()) names.push_back(name);
    for (const auto& name : names)
      if (daemon.remove_port(name)) violated("removing an existing port failed", name);
    names.clear();
    for (const auto& [name, uplink] : daemon.uplinks()) names.push_back(name);
    for (const auto& name : names)
      if (daemon.remove_uplink(name)) violated("removing an existing uplink failed", name);
    settle();
    dispatcher.reset();
    inner.reset();
    api.reset();
    return daemon.config() == config();
  }

  // Runs every handler that is ready, until none is.
  void settle() {
    for (int i = 0; i < 10000 && io.poll() > 0; ++i) {
    }
    io.restart();
  }
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  init_process();
  static std::unique_ptr<Service> service;
  if (!service) service = std::make_unique<Service>();
  run_session(*service, data, size);
  if (!service->close()) service.reset();
  return 0;
}
